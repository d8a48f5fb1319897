import TestSupport
import XCTest
@testable import Proxy

/// Acceptance over in-memory streams: every malformed-request vector (``MalformedRequests``,
/// shared with the admin server's tests) gets 400 (or 431) with the JSON error body, the
/// connection is closed, and no backend connection is even opened; valid variations of the
/// syntax are accepted and forwarded.
final class ClientSessionStrictParsingTests: XCTestCase {
    func testEveryMalformedVectorIsRejectedClosedAndNeverForwarded() throws {
        let harness = try SessionHarness()
        for (name, raw, expected) in MalformedRequests.vectors {
            let client = harness.connectClient()
            client.receive(raw)
            let response = MemoryMessages.response(client.readAll())
            XCTAssertEqual(response.status, expected, name)
            XCTAssertNotNil(response.header("Proxy-Status"), name)
            XCTAssertEqual(response.json?["error"] as? String, "http_request_error", name)
            XCTAssertEqual(client.ending, .closedAfterFlush, "\(name): connection not closed")
            XCTAssertTrue(harness.backends.isEmpty, "\(name) reached the backend")
        }
        // A valid request afterwards proves the backend was reachable all along.
        let client = harness.connectClient()
        client.receive("GET /ok HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.map(\.target), ["/ok"], "only the valid request may reach the backend")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
        XCTAssertEqual(harness.backends.count, 1, "malformed requests must not even open a backend connection")
    }

    func testValidVariationsAreAccepted() throws {
        let harness = try SessionHarness()
        let variations = [
            "GET /a HTTP/1.1\r\nhOsT: api.test\r\n\r\n",
            "POST /b HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding:\tCHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET /c HTTP/1.1\r\nHost:   api.test  \r\nX-Ows: \t value \t\r\n\r\n",
            "GET http://API.test/d HTTP/1.1\r\nHost: api.test\r\n\r\n",
        ]
        let client = harness.connectClient()
        var requests: [MemoryRequest] = []
        for raw in variations {
            client.clearDelivered()
            client.receive(raw)
            let backend = try XCTUnwrap(harness.connectedBackend(), raw)
            requests += MemoryMessages.requests(backend.peerReads())
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200, raw)
        }
        XCTAssertEqual(requests.map(\.target), ["/a", "/b", "/c", "/d"])
        XCTAssertEqual(requests.count, 4)
        if requests.count == 4 {
            XCTAssertEqual(requests[1].body, Array("hello".utf8))
            XCTAssertEqual(requests[2].headers("X-Ows"), ["value"])
        }
        XCTAssertEqual(harness.backends.count, 1, "one pooled connection served them all")
    }
}
