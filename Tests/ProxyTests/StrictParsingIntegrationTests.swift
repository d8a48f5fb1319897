import TestSupport
import XCTest

/// Acceptance: every malformed-request vector (shared with the admin server's tests) gets 400 (or
/// 431), the connection is closed, and not one byte reaches the backend.
final class StrictParsingIntegrationTests: XCTestCase {
    private static let host = "Host: api.test\r\n"
    private static let vectors = MalformedRequests.vectors

    func testEveryMalformedVectorIsRejectedClosedAndNeverForwarded() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        for (name, raw, expected) in Self.vectors {
            let client = try RawClient(port: proxy.port, timeout: 5)
            client.send(raw)
            let response = try client.readResponse()
            XCTAssertEqual(response.status, expected, name)
            XCTAssertNotNil(response.header("Proxy-Status"), name)
            XCTAssertEqual(response.json?["error"] as? String, "http_request_error", name)
            XCTAssertTrue(client.waitForClose(), "\(name): connection not closed")
            Thread.sleep(forTimeInterval: 0.02)
            XCTAssertEqual(backend.connections().count, 0, "\(name) reached the backend")
        }
        // A valid request afterwards proves the backend was reachable all along.
        let client = try RawClient(port: proxy.port)
        client.send("GET /ok HTTP/1.1\r\n\(Self.host)Connection: close\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 1, "only the valid request may reach the backend")
        XCTAssertEqual(requests.first?["target"] as? String, "/ok")
        XCTAssertEqual(backend.connections().count, 1, "malformed requests must not even open a backend connection")
    }

    func testValidVariationsAreAccepted() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let variations = [
            "GET /a HTTP/1.1\r\nhOsT: api.test\r\n\r\n",
            "POST /b HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding:\tCHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET /c HTTP/1.1\r\nHost:   api.test  \r\nX-Ows: \t value \t\r\n\r\n",
            "GET http://API.test/d HTTP/1.1\r\nHost: api.test\r\n\r\n",
        ]
        let client = try RawClient(port: proxy.port)
        for raw in variations {
            client.send(raw)
            XCTAssertEqual(try client.readResponse().status, 200, raw)
        }
        let requests = backend.requests()
        XCTAssertEqual(requests.map { $0["target"] as? String }, ["/a", "/b", "/c", "/d"])
        XCTAssertEqual(requests[1]["body_len"] as? Int, 5)
        XCTAssertEqual(Backend.headerValues(requests[2], "X-Ows"), ["value"])
    }
}
