import Foundation
import TestSupport
import XCTest

/// `timeouts:` connect, responseHeaders and clientHeader, each set to 1 s.
final class TimeoutTests: XCTestCase {
    /// Route `api.test` → `upstream` with 1 s connect/responseHeaders/clientHeader timeouts.
    static func yaml(upstream: String, tls: String = "") -> String {
        ProxyHarness.yaml(upstream: upstream, tls: tls, timeouts: "{connect: 1s, responseHeaders: 1s, clientHeader: 1s}")
    }

    func testUpstreamThatNeverCompletesTLSHandshakeIs504ConnectionTimeout() throws {
        let ca = try TestCA()
        let blackhole = try FixtureProcess(script: "ProxyTests/Fixtures/blackhole.py")
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "https://127.0.0.1:\(blackhole.port)", tls: "caFile: \(ca.caCert)"))
        let client = try RawClient(port: proxy.port, timeout: 10)
        let start = Date()
        client.send("GET /hang HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(response.status, 504, "body: \(response.text)")
        XCTAssertEqual(response.json?["error"] as? String, "connection_timeout", "body: \(response.text)")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=connection_timeout") ?? false)
        XCTAssertGreaterThanOrEqual(elapsed, 0.8, "answered before the 1 s connect timeout could have fired")
        XCTAssertLessThan(elapsed, 5, "the 1 s connect timeout (TCP + TLS handshake) was not applied")
    }

    func testBackendThatNeverAnswersIs504ResponseTimeout() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "http://127.0.0.1:\(backend.port)"))
        let client = try RawClient(port: proxy.port, timeout: 10)
        let start = Date()
        client.send("GET /slow?ms=10000 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(response.status, 504, "body: \(response.text)")
        XCTAssertEqual(response.json?["error"] as? String, "http_response_timeout", "body: \(response.text)")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_response_timeout") ?? false)
        XCTAssertGreaterThanOrEqual(elapsed, 0.8, "answered before the 1 s responseHeaders timeout could have fired")
        XCTAssertLessThan(elapsed, 5, "the 1 s responseHeaders timeout was not applied")
        XCTAssertEqual(backend.requests().count, 1, "the request reached the backend once")
    }

    func testIncompleteRequestHeadIs408ThenClosed() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "http://127.0.0.1:\(backend.port)"))
        let client = try RawClient(port: proxy.port, timeout: 10)
        let start = Date()
        client.send("GET /x HTTP/1.1\r\nHost: api.te")
        let response = try client.readResponse()
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(response.status, 408, "body: \(response.text)")
        let type = response.json?["error"] as? String
        XCTAssertNotNil(type, "408 carries the JSON error body; got: \(response.text)")
        XCTAssertNotNil(response.json?["message"] as? String, "408 carries a JSON message; got: \(response.text)")
        let proxyStatus = response.header("Proxy-Status") ?? ""
        XCTAssertTrue(proxyStatus.hasPrefix("token-sidecar;"), "Proxy-Status: \(proxyStatus)")
        XCTAssertTrue(proxyStatus.contains("error=\(type ?? "?")"), "Proxy-Status names the same error type: \(proxyStatus)")
        XCTAssertGreaterThanOrEqual(elapsed, 0.8, "answered before the 1 s clientHeader timeout could have fired")
        XCTAssertLessThan(elapsed, 5, "the 1 s clientHeader timeout was not applied")
        XCTAssertTrue(client.waitForClose(), "the connection is closed after the 408")
        XCTAssertEqual(backend.requests().count, 0, "nothing reached the backend")
    }
}
