import TestSupport
import XCTest
import Glibc

/// Errors the proxy produces when the backend cannot be used.
final class UpstreamErrorTests: XCTestCase {
    func testRefusedConnectionIs502ConnectionRefused() throws {
        // Bind and close a socket to get a port nobody listens on.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        close(fd)

        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 502)
        XCTAssertEqual(response.json?["error"] as? String, "connection_refused")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=connection_refused") ?? false)
    }

    func testMalformedUpstreamResponseIs502AndConnectionDiscarded() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        for path in ["/malformed", "/garbage"] {
            let client = try RawClient(port: proxy.port)
            client.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 502, path)
            XCTAssertEqual(response.json?["error"] as? String, "http_protocol_error", path)
        }
        // The next request works, on a fresh upstream connection.
        let client = try RawClient(port: proxy.port)
        client.send("GET /fine HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(backend.connections().count, 3)
    }

    func testCloseDelimitedResponseIsRelayed() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /nocl HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertFalse(response.body.isEmpty)
        client.send("GET /again HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
    }
}
