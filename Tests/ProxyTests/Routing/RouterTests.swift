import Config
import Credentials
import HTTP1
import TokenManager
import XCTest
@testable import Proxy

final class RouterTests: XCTestCase {
    private func router(_ otherHosts: String = "deny") throws -> Router {
        let config = try ConfigLoader.parse(yaml: """
        otherHosts: \(otherHosts)
        credentials:
          api: {type: static, token: abc}
        routes:
          - host: "api.test"
            upstream: "http://10.1.2.3:8080"
            credential: api
          - host: "*.svc.test:8443"
            preserveHost: true
            credential: api
          - host: "plain.test"
          - host: "[::1]:8080"
            credential: api
        """, file: "t.yaml", environment: [:])
        return try Router(config: config, credentials: try CredentialFactory.make(from: config, environment: [:]))
    }

    private func head(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    func testAbsoluteAndOriginFormRouteToUpstreamWithItsAuthority() throws {
        let r = try router()
        for text in ["GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n", "GET /x HTTP/1.1\r\nHost: API.test\r\n\r\n"] {
            let d = try r.decide(head(text)).get()
            XCTAssertEqual(d.target.host, "10.1.2.3")
            XCTAssertEqual(d.target.port, 8080)
            XCTAssertEqual(d.hostField, "10.1.2.3:8080")
            XCTAssertEqual(d.credential?.name, "api")
        }
    }

    func testAFixedRouteSharesOneDecisionAndACopyLeavesItAlone() throws {
        let r = try router()
        let first = try r.decide(head("GET http://api.test/a HTTP/1.1\r\nHost: api.test\r\n\r\n")).get()
        let second = try r.decide(head("GET /b HTTP/1.1\r\nHost: api.test\r\n\r\n")).get()
        XCTAssertTrue(first === second, "a route with a fixed target hands every request the decision built at load")
        let kept = first.keepingClientAuthorization()
        let other = first.with(credential: nil)
        XCTAssertTrue(kept.keptClientAuthorization)
        XCTAssertNil(other.credential)
        XCTAssertFalse(first.keptClientAuthorization, "copies never change the shared decision")
        XCTAssertEqual(first.credential?.name, "api")
        // An exact route without upstream: the Host value follows whether the request named the port.
        let bare = try r.decide(head("GET http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n")).get()
        XCTAssertEqual(bare.hostField, "[::1]:8080")
        let wildcard = try r.decide(head("GET http://a.svc.test:8443/ HTTP/1.1\r\nHost: a.svc.test:8443\r\n\r\n")).get()
        let wildcard2 = try r.decide(head("GET http://b.svc.test:8443/ HTTP/1.1\r\nHost: b.svc.test:8443\r\n\r\n")).get()
        XCTAssertEqual(wildcard2.target.host, "b.svc.test", "a wildcard route decides per request")
        XCTAssertFalse(wildcard === wildcard2)
    }

    func testWildcardWithPortAndPreserveHostConnectsToRequestedHost() throws {
        let d = try router().decide(head("GET http://a.svc.test:8443/ HTTP/1.1\r\nHost: a.svc.test:8443\r\n\r\n")).get()
        XCTAssertEqual(d.target.host, "a.svc.test")
        XCTAssertEqual(d.target.port, 8443)
        XCTAssertEqual(d.hostField, "a.svc.test:8443")
        XCTAssertNotNil(d.credential)
        XCTAssertThrowsError(try router().decide(head("GET http://a.svc.test/ HTTP/1.1\r\nHost: a.svc.test\r\n\r\n")).get(),
                             "port 80 does not match a :8443 pattern")
    }

    func testRouteWithoutCredentialAndUnroutedPolicies() throws {
        XCTAssertNil(try router().decide(head("GET http://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n")).get().credential)
        let denied = try router().decide(head("GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n\r\n"))
        guard case .failure(let error) = denied else { return XCTFail("unrouted host must be denied") }
        XCTAssertEqual(error.status, 403)
        let forwarded = try router("forward").decide(head("GET http://x.test:81/ HTTP/1.1\r\nHost: x.test:81\r\n\r\n")).get()
        XCTAssertEqual(forwarded.target.host, "x.test")
        XCTAssertEqual(forwarded.target.port, 81)
        XCTAssertNil(forwarded.credential)
    }

    /// A route without an upstream sends the request to the host it names, with the Host the
    /// request gave (its port written or not): prepared once, identical to the request's own.
    func testAnExactRouteWithoutUpstreamKeepsTheRequestsOwnAuthority() throws {
        let r = try router()
        let cases = [("GET http://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n", "plain.test"),
                     ("GET http://PLAIN.test:80/ HTTP/1.1\r\nHost: plain.test\r\n\r\n", "plain.test:80"),
                     ("GET / HTTP/1.1\r\nHost: Plain.Test\r\n\r\n", "plain.test"),
                     ("GET http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", "[::1]:8080")]
        for (text, hostField) in cases {
            let head = try head(text)
            let d = try r.decide(head).get()
            XCTAssertEqual(d.hostField, hostField, text)
            XCTAssertEqual(d.target.poolKey, "http|\(d.target.host)|\(d.target.port)|")
            XCTAssertFalse(d.target.allowsLinkLocal)
        }
        let ipv6 = try r.decide(head(cases[3].0)).get()
        XCTAssertEqual(ipv6.target.host, "::1")
        XCTAssertEqual(ipv6.target.port, 8080)
        XCTAssertEqual(ipv6.credential?.name, "api")
        XCTAssertEqual(ipv6.routeName, "[::1]:8080")
    }
}
