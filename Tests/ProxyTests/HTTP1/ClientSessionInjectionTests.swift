import TestSupport
import XCTest
@testable import Proxy

/// Acceptance 2 and 3 over in-memory streams: exactly one injected token for routed hosts
/// whatever `Authorization` lines the app sends (or names in `Connection`), none for hosts
/// forwarded by `otherHosts: forward`, where the app's own `Authorization` passes.
final class ClientSessionInjectionTests: XCTestCase {
    /// `request` from a new client, as the backend received it, answered with a 200.
    private func forwarded(_ harness: SessionHarness, _ request: String,
                           file: StaticString = #filePath, line: UInt = #line) throws -> MemoryRequest {
        try harness.forward(request, from: harness.connectClient(), file: file, line: line)
    }

    /// A request as curl sends it through a proxy (`curl -x … http://<authority><path>`), with `extra` lines.
    private func curl(_ authority: String, _ path: String, _ extra: String = "") -> String {
        "GET http://\(authority)\(path) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n"
            + "Proxy-Connection: Keep-Alive\r\n\(extra)\r\n"
    }

    func testCurlShapedRequestsGetExactlyOneInjectedToken() throws {
        let harness = try SessionHarness()
        let requests = try [
            forwarded(harness, curl("api.test", "/x")),
            forwarded(harness, curl("api.test", "/x", "Authorization: Bearer evil\r\n")),
            forwarded(harness, curl("api.test", "/x", "Authorization: Bearer evil\r\nConnection: close, Authorization\r\n")),
        ]
        for request in requests {
            XCTAssertEqual(request.headers("Authorization"), ["Bearer tok-1"])
            XCTAssertEqual(request.headers("Via"), ["1.1 token-sidecar"])
            XCTAssertEqual(request.headers("Host"), ["backend.test:8080"])
            XCTAssertEqual(request.headers("Connection"), [])
            XCTAssertEqual(request.headers("Proxy-Connection"), [])
            XCTAssertEqual(request.target, "/x")
        }
        XCTAssertEqual(harness.targets.map(\.host), ["backend.test"])
    }

    func testOriginFormRequestsAreRoutedByHost() throws {
        let harness = try SessionHarness()
        let request = try forwarded(harness, "GET /base?q=1 HTTP/1.1\r\nHost: api.test\r\n"
            + "Authorization: Basic Zm9vOmJhcg==\r\nAuthorization: Bearer two\r\n\r\n")
        XCTAssertEqual(request.target, "/base?q=1")
        XCTAssertEqual(request.headers("Authorization"), ["Bearer tok-1"])
        XCTAssertEqual(harness.targets.first?.host, "backend.test")
    }

    func testOtherHostsForwardSendsNoTokenAndKeepsClientAuthorization() throws {
        let harness = try SessionHarness(top: "otherHosts: forward")
        let request = try forwarded(harness, curl("127.0.0.1:9", "/other", "Authorization: Bearer mine\r\n"))
        XCTAssertEqual(request.headers("Authorization"), ["Bearer mine"])
        XCTAssertEqual(request.headers("Host"), ["127.0.0.1:9"])
        XCTAssertEqual(request.target, "/other")
        XCTAssertEqual(harness.targets.first?.host, "127.0.0.1")
        XCTAssertEqual(harness.targets.first?.port, 9)
        let bare = try forwarded(harness, curl("127.0.0.1:9", "/bare"))
        XCTAssertEqual(bare.headers("Authorization"), [])
    }
}
