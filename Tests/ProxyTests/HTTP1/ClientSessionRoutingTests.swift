import TestSupport
import XCTest
@testable import Proxy

/// Routing decisions over in-memory streams: an unrouted host and a `CONNECT` are denied with
/// `Proxy-Status` and a JSON body before any backend is contacted, and a wildcard route matches
/// subdomains only, keeping the app's Host with `preserveHost`.
final class ClientSessionRoutingTests: XCTestCase {
    func testUnroutedHostIsDeniedWithProxyStatusAndJSON() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET http://127.0.0.1:9/x HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n")
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(response.header("Content-Type"), "application/json")
        let proxyStatus = try XCTUnwrap(response.header("Proxy-Status"))
        XCTAssertTrue(proxyStatus.hasPrefix("token-sidecar; error=http_request_denied; details=\""), proxyStatus)
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied")
        XCTAssertNotNil(response.json?["message"] as? String)
        XCTAssertTrue(harness.backends.isEmpty, "nothing was contacted for the denied request")
        // A denied bodiless request keeps the connection usable.
        XCTAssertEqual(client.ending, .open)
        client.clearDelivered()
        client.receive("GET http://api.test/after HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertEqual(MemoryMessages.requests(backend.peerReads()).map(\.target), ["/after"])
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
        XCTAssertEqual(harness.backends.count, 1)
    }

    func testPreserveHostAndWildcardRoutes() throws {
        let harness = try SessionHarness(routes: """
              - host: "*.svc.test"
                upstream: "http://wild.test:8080"
                preserveHost: true
                credential: api
            """)
        let client = harness.connectClient()
        client.receive("GET http://a.b.svc.test/w HTTP/1.1\r\nHost: a.b.svc.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertEqual(harness.targets.first?.host, "wild.test", "the wildcard route's upstream")
        let request = try XCTUnwrap(MemoryMessages.requests(backend.peerReads()).first)
        XCTAssertEqual(request.headers("Host"), ["a.b.svc.test"])
        XCTAssertEqual(request.headers("Authorization"), ["Bearer tok-1"])
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
        client.clearDelivered()
        client.receive("GET http://svc.test/w HTTP/1.1\r\nHost: svc.test\r\n\r\n")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 403, "*.svc.test must not match svc.test itself")
        XCTAssertTrue(backend.peerReads().isEmpty)
        XCTAssertEqual(harness.backends.count, 1)
    }

    func testConnectIsRefusedWithExplanation() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 403, "CONNECT is denied by default (connect: deny)")
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_request_denied") ?? false)
        XCTAssertTrue((response.json?["message"] as? String ?? "").contains("http://"))
        XCTAssertTrue(harness.backends.isEmpty)
        XCTAssertTrue(harness.context.tunnels.isEmpty)
    }
}
