import TestSupport
import XCTest
@testable import Proxy

/// Keep-alive toward the client, pooling toward the backend, pipelining in order, over
/// in-memory streams: the test plays a backend that answers every request with its target (as
/// the socket tests' backend does). Several worker threads serving clients at once is in
/// ``SocketEdgeTests``.
final class ClientSessionKeepAliveTests: XCTestCase {
    /// Answers every request that reached the last backend (and those the proxy sends on once
    /// answered) with a JSON body naming its target; returns them in order.
    @discardableResult
    private func serve(_ harness: SessionHarness) throws -> [MemoryRequest] {
        let backend = try XCTUnwrap(harness.connectedBackend())
        var served: [MemoryRequest] = []
        while true {
            let requests = MemoryMessages.requests(backend.peerReads())
            if requests.isEmpty { return served }
            for request in requests {
                let body = "{\"target\": \"\(request.target)\"}"
                backend.receive("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
            served += requests
        }
    }

    /// The client's next response (what it took since the last call).
    private func nextResponse(_ client: MemoryStream) -> TestResponse {
        defer { client.clearDelivered() }
        return MemoryMessages.response(client.readAll())
    }

    func testHundredSequentialRequestsUseOneUpstreamConnection() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        var requests: [MemoryRequest] = []
        for i in 0..<100 {
            client.receive("GET http://api.test/seq/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            requests += try serve(harness)
            let response = nextResponse(client)
            XCTAssertEqual(response.status, 200)
            XCTAssertNil(response.header("Connection"))
        }
        XCTAssertEqual(requests.count, 100)
        XCTAssertEqual(requests.last?.target, "/seq/99")
        XCTAssertEqual(harness.backends.count, 1, "all requests over one upstream connection")
        XCTAssertEqual(client.ending, .open)
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        var burst = ""
        for i in 0..<10 {
            burst += i == 4
                ? "POST /p/\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\n\r\nabc"
                : "GET /p/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n"
        }
        client.receive(burst)
        let requests = try serve(harness)
        XCTAssertEqual(requests.map(\.target), (0..<10).map { "/p/\($0)" })
        XCTAssertEqual(String(decoding: requests[4].body, as: UTF8.self), "abc")
        let responses = MemoryMessages.responses(client.readAll())
        XCTAssertEqual(responses.count, 10)
        for (i, response) in responses.enumerated() {
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["target"] as? String, "/p/\(i)")
        }
    }

    func testHTTP10KeepsAliveOnlyWhenAsked() throws {
        let harness = try SessionHarness()
        let keep = harness.connectClient()
        keep.receive("GET /k1 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n")
        try serve(harness)
        let first = nextResponse(keep)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.header("Connection")?.lowercased(), "keep-alive")
        XCTAssertEqual(keep.ending, .open)
        keep.receive("GET /k2 HTTP/1.0\r\nHost: api.test\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(try serve(harness).map(\.target), ["/k2"])
        XCTAssertEqual(nextResponse(keep).status, 200)
        XCTAssertEqual(keep.ending, .open)

        let once = harness.connectClient()
        once.receive("GET /once HTTP/1.0\r\nHost: api.test\r\n\r\n")
        try serve(harness)
        XCTAssertEqual(nextResponse(once).status, 200)
        XCTAssertEqual(once.ending, .closedAfterFlush, "an HTTP/1.0 request without keep-alive closes after its response")
    }

    func testConnectionCloseFromClientClosesAfterResponse() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET /bye HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        try serve(harness)
        let response = nextResponse(client)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Connection"), "close")
        XCTAssertEqual(client.ending, .closedAfterFlush)
    }
}
