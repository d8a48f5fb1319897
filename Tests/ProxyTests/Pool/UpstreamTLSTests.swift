import Foundation
import TestSupport
import XCTest

/// TLS originated by the proxy toward `https://` upstreams (Debian nginx with a test CA), and
/// the connect timeout for a TLS handshake that never completes (a blackhole).
final class UpstreamTLSTests: XCTestCase {
    static let echoAuthorization = #"location / { return 200 "auth=$http_authorization\n"; }"#

    /// One route `api.test` → `upstream` with token `abc`; `tls` holds extra route keys (caFile, ...).
    static func yaml(upstream: String, tls: String = "", credential: Bool = true) -> String {
        ProxyHarness.yaml(upstream: upstream, tls: tls, credential: credential, timeouts: "{connect: 5s, responseHeaders: 10s}")
    }

    /// Sends one request for `api.test` and reads the response (bounded by the client timeout).
    private func get(_ proxy: ProxyHarness, authorization: String? = "Bearer evil") throws -> TestResponse {
        let client = try RawClient(port: proxy.port, timeout: 15)
        let field = authorization.map { "Authorization: \($0)\r\n" } ?? ""
        client.send("GET /tls HTTP/1.1\r\nHost: api.test\r\n\(field)\r\n")
        return try client.readResponse()
    }

    /// An upstream that accepts TCP and never completes the TLS handshake (a blackhole): the
    /// 1 s connect timeout covers TCP and TLS together, and its expiry is a 504.
    func testUpstreamThatNeverCompletesTLSHandshakeIs504ConnectionTimeout() throws {
        let ca = try TestCA()
        let blackhole = try FixtureProcess(script: "ProxyTests/Fixtures/blackhole.py")
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "https://127.0.0.1:\(blackhole.port)", tls: "caFile: \(ca.caCert)",
                                                             timeouts: "{connect: 1s, responseHeaders: 1s, clientHeader: 1s}"))
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

    func testTrustedCAFileInjectsTokenOverTLS() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echoAuthorization)
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "https://localhost:\(nginx.port)", tls: "caFile: \(ca.caCert)"))
        let response = try get(proxy)
        XCTAssertEqual(response.status, 200, "body: \(response.text)")
        XCTAssertEqual(response.text, "auth=Bearer abc\n", "exactly the configured token reaches the TLS backend")
        let lines = nginx.waitForLogLines(1)
        XCTAssertEqual(lines.count, 1, "nginx log: \(lines)")
        XCTAssertTrue(lines.first?.contains("\"Bearer abc\" \"GET /tls HTTP/1.1\"") ?? false, "nginx log: \(lines)")
    }

    func testUntrustedCertificateWithoutCAFileIs502AndNothingIsSent() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echoAuthorization)
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "https://localhost:\(nginx.port)"))
        let response = try get(proxy)
        assertCertificateError(response)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [], "no request may reach a backend whose certificate was not verified")
    }

    func testCertificateForAnotherNameIs502AndNothingIsSent() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.otherCert, key: ca.otherKey, locations: Self.echoAuthorization)
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "https://localhost:\(nginx.port)", tls: "caFile: \(ca.caCert)"))
        let response = try get(proxy)
        assertCertificateError(response)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [], "a certificate for other.test must not be accepted for localhost")
    }

    func testIPLiteralUpstreamMatchesIPSubjectAltName() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echoAuthorization)
        let proxy = try ProxyHarness(yaml: Self.yaml(
            upstream: "https://127.0.0.1:\(nginx.port)", tls: "caFile: \(ca.caCert)", credential: false))
        let response = try get(proxy, authorization: nil)
        XCTAssertEqual(response.status, 200, "body: \(response.text)")
        XCTAssertEqual(response.text, "auth=\n", "a token-less route injects nothing")
        XCTAssertEqual(nginx.waitForLogLines(1).count, 1)
    }

    /// A backend that closes after every response makes every request a new TLS connection:
    /// all but the first resume the session the backend issued, and the metrics say so.
    func testNewConnectionsToTheSameBackendResumeTheTLSSession() throws {
        let ca = try TestCA()
        let closing = #"location / { keepalive_timeout 0; return 200 "auth=$http_authorization\n"; }"#
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: closing)
        let proxy = try ProxyHarness(yaml: Self.yaml(upstream: "https://localhost:\(nginx.port)", tls: "caFile: \(ca.caCert)"))
        for _ in 0..<5 {
            let response = try get(proxy)
            XCTAssertEqual(response.status, 200, "body: \(response.text)")
            XCTAssertEqual(response.text, "auth=Bearer abc\n")
        }
        let label = "localhost:\(nginx.port)"
        let metrics = proxy.metrics()
        XCTAssertEqual(metrics.upstreamTLSHandshakes[label], 5, "one handshake per request: \(metrics.upstreamTLSHandshakes)")
        XCTAssertEqual(metrics.upstreamTLSResumed[label], 4, "every handshake after the first resumes: \(metrics.upstreamTLSResumed)")
    }

    private func assertCertificateError(_ response: TestResponse, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(response.status, 502, "body: \(response.text)", file: file, line: line)
        XCTAssertEqual(response.json?["error"] as? String, "tls_certificate_error", "body: \(response.text)", file: file, line: line)
        let proxyStatus = response.header("Proxy-Status") ?? ""
        XCTAssertTrue(proxyStatus.contains("error=tls_certificate_error"), "Proxy-Status: \(proxyStatus)", file: file, line: line)
    }
}
