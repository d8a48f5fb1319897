import Config
import XCTest

/// A route's rules: first match wins, default deny, methods and paths each optional.
final class RoutePolicyTests: XCTestCase {
    private func rule(_ name: String, _ methods: [String], _ paths: [String]) throws -> RouteRule {
        RouteRule(name: name, methods: methods, paths: try paths.map { try PathPattern.parse($0).get() })
    }

    func testFirstMatchWinsAndEverythingElseIsDenied() throws {
        let policy = RoutePolicy(rules: [try rule("read-orders", ["GET", "HEAD"], ["/v1/orders/**"]),
                                         try rule("create-order", ["POST"], ["/v1/orders"]),
                                         try rule("any-health", [], ["/health"]),
                                         try rule("all-gets", ["GET"], [])])
        XCTAssertEqual(policy.decide(method: "GET", path: "/v1/orders/7"), .allowed(rule: "read-orders"))
        XCTAssertEqual(policy.decide(method: "HEAD", path: "/v1/orders"), .allowed(rule: "read-orders"))
        XCTAssertEqual(policy.decide(method: "POST", path: "/v1/orders"), .allowed(rule: "create-order"))
        XCTAssertEqual(policy.decide(method: "POST", path: "/v1/orders/7"), .denied)
        XCTAssertEqual(policy.decide(method: "DELETE", path: "/health"), .allowed(rule: "any-health"))
        XCTAssertEqual(policy.decide(method: "GET", path: "/admin"), .allowed(rule: "all-gets"))
        XCTAssertEqual(policy.decide(method: "PUT", path: "/admin"), .denied)
        XCTAssertEqual(policy.decide(method: "get", path: "/v1/orders"), .denied, "methods are case-sensitive (RFC 9110 §9.1)")
        XCTAssertEqual(RoutePolicy(rules: []).decide(method: "GET", path: "/"), .denied)
    }

    func testManyFirstSegmentsEachFindTheirRuleAndAnUnknownOneOnlyTheOpenRules() throws {
        // 100 first segments (the index's table grows and probes past collisions), then a rule
        // with no literal first segment, which every path may reach.
        var rules = try (0..<100).map { try rule("r\($0)", ["GET"], ["/s\($0)/items/**"]) }
        rules.append(try rule("open", ["POST"], ["/*/items"]))
        let policy = RoutePolicy(rules: rules)
        for index in 0..<100 {
            XCTAssertEqual(policy.decide(method: "GET", path: "/s\(index)/items/\(index)"), .allowed(rule: "r\(index)"))
            XCTAssertEqual(policy.decide(method: "GET", path: "/s\(index)/other"), .denied)
            XCTAssertEqual(policy.decide(method: "POST", path: "/s\(index)/items"), .allowed(rule: "open"))
        }
        XCTAssertEqual(policy.decide(method: "GET", path: "/s100/items"), .denied)
        XCTAssertEqual(policy.decide(method: "POST", path: "/s100/items"), .allowed(rule: "open"))
        XCTAssertEqual(policy.decide(method: "POST", path: "/"), .denied)
        XCTAssertEqual(policy.firstAllowing(method: "GET", path: UnsafeBufferPointer(start: nil, count: 0)), nil, "an empty path matches none of these rules")
    }
}
