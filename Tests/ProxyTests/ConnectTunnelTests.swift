import Foundation
import TestSupport
import XCTest

/// `CONNECT`: refused by default, tunnelled (untouched) only to `connect: {allow: [...]}` destinations.
final class ConnectTunnelTests: XCTestCase {
    func testConnectIsDeniedByDefault() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port, timeout: 10)
        client.send("CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 403, "body: \(response.text)")
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied", "body: \(response.text)")
        let message = response.json?["message"] as? String ?? ""
        XCTAssertTrue(message.contains("http://"), "the message tells the client to send http:// URLs instead: \(message)")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_request_denied") ?? false)
        XCTAssertEqual(backend.connections().count, 0)
    }

    func testAllowedConnectTunnelsTLSUntouchedAndOthersAreDenied() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey,
                                 locations: #"location / { return 200 "auth=$http_authorization\n"; }"#)
        let unusedBackendPort = try Nginx.freePort()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(unusedBackendPort)",
                                                             timeouts: "{connect: 2s}",
                                                             top: #"connect: {allow: ["localhost:\#(nginx.port)"]}"#))
        let result = try Curl.run(["-p", "-x", "http://127.0.0.1:\(proxy.port)", "--cacert", ca.caCert,
                                   "https://localhost:\(nginx.port)/tunnel"])
        XCTAssertEqual(result.status, 0, "curl: \(result.err)")
        XCTAssertEqual(result.out, "auth=\n", "nothing is injected into a tunnel")
        let lines = nginx.waitForLogLines(1)
        XCTAssertEqual(lines.count, 1, "nginx log: \(lines)")
        XCTAssertTrue(lines.first?.contains("\"GET /tunnel HTTP/1.1\"") ?? false, "nginx log: \(lines)")

        // A destination that is not on the list (nothing listens there) is refused before connecting.
        let unlisted = try Nginx.freePort()
        let client = try RawClient(port: proxy.port, timeout: 10)
        client.send("CONNECT localhost:\(unlisted) HTTP/1.1\r\nHost: localhost:\(unlisted)\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 403, "body: \(response.text)")
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied", "body: \(response.text)")
    }
}
