import TestSupport
import XCTest

/// Acceptance 2 and 3: exactly one injected token for routed hosts, none for others.
final class InjectionTests: XCTestCase {
    func testCurlThroughProxyGetsExactlyOneInjectedToken() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let proxyURL = "http://127.0.0.1:\(proxy.port)"

        let plain = try Curl.run(["-x", proxyURL, "http://api.test/x"])
        XCTAssertEqual(plain.status, 0, plain.err)
        let evil = try Curl.run(["-x", proxyURL, "-H", "Authorization: Bearer evil", "http://api.test/x"])
        XCTAssertEqual(evil.status, 0, evil.err)
        let sneaky = try Curl.run(["-x", proxyURL, "-H", "Authorization: Bearer evil",
                                   "-H", "Connection: close, Authorization", "http://api.test/x"])
        XCTAssertEqual(sneaky.status, 0, sneaky.err)

        let requests = backend.requests()
        XCTAssertEqual(requests.count, 3)
        for request in requests {
            XCTAssertEqual(Backend.headerValues(request, "Authorization"), ["Bearer abc"])
            XCTAssertEqual(Backend.headerValues(request, "Via"), ["1.1 token-sidecar"])
            XCTAssertEqual(Backend.headerValues(request, "Host"), ["127.0.0.1:\(backend.port)"])
            XCTAssertEqual(Backend.headerValues(request, "Connection"), [])
            XCTAssertEqual(Backend.headerValues(request, "Proxy-Connection"), [])
            XCTAssertEqual(request["target"] as? String, "/x")
        }
    }

    func testOriginFormRequestsAreRoutedByHost() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /base?q=1 HTTP/1.1\r\nHost: api.test\r\nAuthorization: Basic Zm9vOmJhcg==\r\nAuthorization: Bearer two\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let request = try XCTUnwrap(backend.requests().first)
        XCTAssertEqual(request["target"] as? String, "/base?q=1")
        XCTAssertEqual(Backend.headerValues(request, "Authorization"), ["Bearer abc"])
    }

    func testUnroutedHostIsDeniedWithProxyStatusAndJSON() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET http://127.0.0.1:\(backend.port)/x HTTP/1.1\r\nHost: 127.0.0.1:\(backend.port)\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(response.header("Content-Type"), "application/json")
        let proxyStatus = try XCTUnwrap(response.header("Proxy-Status"))
        XCTAssertTrue(proxyStatus.hasPrefix("token-sidecar; error=http_request_denied; details=\""), proxyStatus)
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied")
        XCTAssertNotNil(response.json?["message"] as? String)
        // A denied bodiless request keeps the connection usable.
        client.send("GET http://api.test/after HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(backend.requests().map { $0["target"] as? String }, ["/after"])
    }

    func testOtherHostsForwardSendsNoTokenAndKeepsClientAuthorization() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port, otherHosts: "forward"))
        let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-H", "Authorization: Bearer mine",
                                   "http://127.0.0.1:\(backend.port)/other"])
        XCTAssertEqual(result.status, 0, result.err)
        let request = try XCTUnwrap(backend.requests().first)
        XCTAssertEqual(Backend.headerValues(request, "Authorization"), ["Bearer mine"])
        XCTAssertEqual(Backend.headerValues(request, "Host"), ["127.0.0.1:\(backend.port)"])
        let bare = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(backend.port)/bare"])
        XCTAssertEqual(bare.status, 0, bare.err)
        XCTAssertEqual(Backend.headerValues(backend.requests()[1], "Authorization"), [])
    }

    func testPreserveHostAndWildcardRoutes() throws {
        let backend = try Backend()
        let extra = """
          - host: "*.svc.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            preserveHost: true
            credential: api
        """
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port, extraRoutes: extra))
        let client = try RawClient(port: proxy.port)
        client.send("GET http://a.b.svc.test/w HTTP/1.1\r\nHost: a.b.svc.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        client.send("GET http://svc.test/w HTTP/1.1\r\nHost: svc.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 403, "*.svc.test must not match svc.test itself")
        let request = try XCTUnwrap(backend.requests().first)
        XCTAssertEqual(Backend.headerValues(request, "Host"), ["a.b.svc.test"])
        XCTAssertEqual(Backend.headerValues(request, "Authorization"), ["Bearer abc"])
    }

    func testConnectIsRefusedWithExplanation() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 403, "CONNECT is denied by default (connect: deny)")
        XCTAssertEqual(response.json?["error"] as? String, "http_request_denied")
        XCTAssertNotNil(response.header("Proxy-Status"))
        XCTAssertTrue((response.json?["message"] as? String ?? "").contains("http://"))
        XCTAssertEqual(backend.connections().count, 0)
    }
}
