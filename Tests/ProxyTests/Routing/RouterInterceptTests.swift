import Config
import Credentials
import Foundation
import HTTP1
import TokenManager
import XCTest
@testable import Proxy

/// Routing of intercepting routes: inside a tunnel only the tunnel's origin (421 otherwise, by
/// Host, absolute URL or SNI), and never a token over plain TCP.
final class RouterInterceptTests: XCTestCase {
    private func router() throws -> Router {
        let directory = FileManager.default.temporaryDirectory.path
        let config = try ConfigLoader.parse(yaml: """
            intercept: {caCertFile: \(directory)/router-intercept-ca.crt}
            credentials:
              api: {type: static, token: abc}
            routes:
              - host: "api.example.com:443"
                intercept: true
                credential: api
              - host: "*.svc.example.com:443"
                intercept: true
                credential: api
            """, file: "t.yaml", environment: [:])
        return try Router(config: config, credentials: try CredentialFactory.make(from: config, environment: [:]))
    }

    private func head(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private let origin = InterceptedOrigin(Authority(host: "api.example.com", port: 443))

    func testInsideATunnelOnlyTheOriginIsServed() throws {
        let r = try router()
        for text in ["GET /x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "GET /x HTTP/1.1\r\nHost: API.example.com:443\r\n\r\n",
                     "GET https://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n"] {
            let decision = try r.decide(head(text), intercepted: origin, serverName: "api.example.com.").get()
            XCTAssertEqual(decision.target.host, "api.example.com", text)
            XCTAssertNotNil(decision.target.tls, "verified TLS upstream")
            XCTAssertEqual(decision.credential?.name, "api")
        }
        for (text, serverName) in [("GET /x HTTP/1.1\r\nHost: other.example.com\r\n\r\n", "api.example.com"),
                                   ("GET /x HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n", "api.example.com"),
                                   ("GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "api.example.com"),
                                   ("GET /x HTTP/1.1\r\nHost: api.example.com\r\n\r\n", "other.example.com")] {
            guard case .failure(let error) = r.decide(try head(text), intercepted: origin, serverName: serverName) else {
                XCTFail("served: \(text) with SNI \(serverName)")
                continue
            }
            XCTAssertEqual(error.status, 421, text)
        }
    }

    func testAWildcardInterceptingRouteSendsPlainRequestsOverTLSToo() throws {
        let r = try router()
        let plain = try r.decide(head("GET http://a.svc.example.com:443/x HTTP/1.1\r\nHost: a.svc.example.com:443\r\n\r\n")).get()
        XCTAssertEqual(plain.target.host, "a.svc.example.com")
        XCTAssertNotNil(plain.target.tls, "the token never goes out over plain TCP")
        let tunnelled = try r.decide(head("GET /x HTTP/1.1\r\nHost: b.svc.example.com\r\n\r\n"),
                                     intercepted: InterceptedOrigin(Authority(host: "b.svc.example.com", port: 443)),
                                     serverName: nil).get()
        XCTAssertEqual(tunnelled.target.host, "b.svc.example.com")
        XCTAssertNotNil(tunnelled.target.tls)
        XCTAssertTrue(r.intercepts(Authority(host: "c.svc.example.com", port: nil)), "CONNECT without a port means 443")
        XCTAssertFalse(r.intercepts(Authority(host: "api.example.com", port: 8443)))
    }
}
