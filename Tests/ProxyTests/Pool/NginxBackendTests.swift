import Foundation
import TestSupport
import XCTest

/// The proxy in front of a real nginx (Debian), as apps will use it.
final class NginxBackendTests: XCTestCase {
    func testHundredKeepAliveRequestsReachNginxOverOneConnectionWithTheToken() throws {
        let nginx = try Nginx(locations: #"location / { return 200 "auth=$http_authorization\n"; }"#)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let client = try RawClient(port: proxy.port)
        for i in 0..<100 {
            client.send("GET http://api.test/n/\(i) HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer evil\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.text, "auth=Bearer abc\n")
        }
        // nginx logs after each response; give the last line a moment.
        var lines: [String] = []
        for _ in 0..<50 where lines.count < 100 {
            lines = nginx.logLines()
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(lines.count, 100)
        let connections = Set(lines.map { $0.split(separator: " ")[0] })
        XCTAssertEqual(connections.count, 1, "all 100 requests over one upstream connection")
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"Bearer abc\"") })
        XCTAssertTrue(lines.last?.hasPrefix("\(connections.first!) 100 ") ?? false, "nginx counted 100 requests on that connection")
    }

    func testLargeDownloadFromNginxIsIntact() throws {
        let nginx = try Nginx(locations: "location /files/ { alias \(FileManager.default.temporaryDirectory.path)/; }")
        let name = "nginx-body-\(UUID().uuidString)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(name)
        var bytes = [UInt8](repeating: 0, count: 4 * 1024 * 1024)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ i >> 9) }
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /files/\(name) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.body.count, bytes.count)
        XCTAssertEqual(sha256Hex(response.body), sha256Hex(bytes))
    }
}

/// `CONNECT` through the proxy with real curl and nginx: an allowed destination is tunnelled
/// with TLS untouched, one not on `connect: {allow: [...]}` is denied. (Denied by default, in
/// memory: ``ClientSessionRoutingTests/testConnectIsRefusedWithExplanation``.)
final class ConnectTunnelTests: XCTestCase {
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
