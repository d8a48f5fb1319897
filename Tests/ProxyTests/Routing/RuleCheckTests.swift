import Config
import HTTP1
import XCTest
@testable import Proxy

/// A route's rules decided from the head: refused, sent on with the normalized path, or only
/// recorded in audit mode.
final class RuleCheckTests: XCTestCase {
    private func policy(_ enforcement: Enforcement = .enforce) throws -> RoutePolicy {
        RoutePolicy(rules: [RouteRule(name: "read-orders", methods: ["GET"], paths: [try PathPattern.parse("/v1/orders/**").get()])],
                    enforcement: enforcement)
    }

    private func check(_ method: String, _ target: String, _ enforcement: Enforcement = .enforce) throws -> Result<RuleCheck.Outcome, RuleCheck.Refusal> {
        let head = try Array("\(method) \(target) HTTP/1.1\r\nHost: api.test\r\n\r\n".utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
        return RuleCheck.check(head, policy: try policy(enforcement), route: "api.test:80")
    }

    func testAllowedRequestsGoOnWithTheNormalizedPath() throws {
        let plain = try check("GET", "/v1/orders/7?x=1").get()
        XCTAssertEqual(plain.rule, 0, "read-orders")
        XCTAssertNil(plain.path, "the same as sent: the audit record takes it from the head")
        XCTAssertNil(plain.editedTarget, "already normal: the head is not edited")
        let messy = try check("GET", "/v1//orders/./7/../8?x=%2F").get()
        XCTAssertEqual(messy.editedTarget, .origin("/v1/orders/8?x=%2F"), "the query is kept as sent")
        XCTAssertEqual(messy.path, "/v1/orders/8")
        let absolute = try check("GET", "http://api.test/v1/%6Frders").get()
        XCTAssertEqual(absolute.editedTarget, .absolute(scheme: "http", authority: try XCTUnwrap(Authority.parse("api.test"[...])), path: "/v1/orders"))
    }

    func testDeniedAndAmbiguousRequestsAreRefusedNamingTheRoute() throws {
        guard case .failure(let denied) = try check("GET", "/v1/admin/../../admin") else { return XCTFail("allowed") }
        XCTAssertEqual(denied.error.status, 403)
        XCTAssertEqual(denied.error.message, "route api.test:80: no rule allows GET /admin")
        XCTAssertEqual(denied.reason, .noRule)
        XCTAssertEqual(denied.path, "/admin", "the audit record names the path that was checked")
        guard case .failure(let post) = try check("POST", "/v1/orders") else { return XCTFail("allowed") }
        XCTAssertEqual(post.error.message, "route api.test:80: no rule allows POST /v1/orders")
        for target in ["/v1/orders/..%2Fadmin", "/v1/orders/..;/admin", "/v1/orders/%2e%2e/admin", "/v1/orders\\..\\admin"] {
            guard case .failure(let ambiguous) = try check("GET", target) else { return XCTFail(target) }
            XCTAssertEqual(ambiguous.error.status, 400, target)
            XCTAssertTrue(ambiguous.error.message.hasPrefix("route api.test:80: the path holds"), ambiguous.error.message)
            XCTAssertEqual(ambiguous.reason, .ambiguousPath)
        }
    }

    func testAuditModeChangesNothing() throws {
        let denied = try check("POST", "/v1//orders", .audit).get()
        XCTAssertNil(denied.rule)
        XCTAssertNil(denied.editedTarget, "sent as the app sent it")
        XCTAssertEqual(denied.path, "/v1/orders")
        XCTAssertEqual(denied.audited, .noRule)
        let ambiguous = try check("GET", "/v1/orders/..%2Fadmin", .audit).get()
        XCTAssertNil(ambiguous.path)
        XCTAssertEqual(ambiguous.audited, .ambiguousPath)
        XCTAssertNil(try check("GET", "/v1/orders/1", .audit).get().audited)
        XCTAssertEqual(try check("GET", "/v1/orders/1", .audit).get().rule, 0)
    }

    func testAPathAlreadyNormalOrNormalizingToItselfIsNotEditedAndAuditedInPlace() throws {
        let accented = try check("GET", "/v1/orders/caf%C3%A9").get()
        XCTAssertEqual(accented.rule, 0)
        XCTAssertNil(accented.editedTarget, "normalizes to itself: sent as it came")
        XCTAssertNil(accented.path, "the head's path is the checked one")
        let denied = try check("DELETE", "/v1/orders/1", .audit).get()
        XCTAssertEqual(denied.audited, .noRule, "audited without normalizing (already normal)")
        XCTAssertNil(denied.path)
        XCTAssertNil(denied.editedTarget)
        let asterisk = try check("OPTIONS", "*", .audit).get()
        XCTAssertEqual(asterisk.path, "/", "OPTIONS * is checked, and recorded, as /")
    }
}
