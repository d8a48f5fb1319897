@_spi(Testing) import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A request body that arrives slowly or not at all, over in-memory streams
/// (``SessionHarness``): a short body is collected before a backend connection is taken, so
/// drippers hold only their own connections; a slow upload is not timed as a slow backend; a
/// chunked body that never starts and a collected body that stalls get 408 and reach no backend.
final class ClientSessionBodyCollectionTests: XCTestCase {
    /// The backend's echo of `request`: the length of the body it got.
    private func echo(_ request: MemoryRequest) -> String {
        let payload = "{\"target\": \"\(request.target)\", \"body_len\": \(request.body.count)}"
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(payload.utf8.count)\r\n\r\n" + payload
    }

    func testSlowUploadIsNotMistakenForASlowBackend() throws {
        let harness = try SessionHarness(top: "timeouts: {responseHeaders: 1s}")
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 30\r\n\r\n")
        for piece in 0..<3 {
            XCTAssertFalse(session.exchangeTimer.isScheduled, "piece \(piece): the request is not complete yet")
            client.receive("0123456789")
        }
        let backend = try XCTUnwrap(harness.connectedBackend())
        let request = try XCTUnwrap(MemoryMessages.requests(backend.peerReads()).first)
        XCTAssertTrue(session.exchangeTimer.isScheduled)
        XCTAssertEqual(session.exchangeTimer.scheduledDelay, .seconds(1),
                       "responseHeaders counts from the end of the request, not its start")
        backend.receive(echo(request))
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 200, "responseHeaders counts from the end of the request, not its start")
        XCTAssertEqual(response.json?["body_len"] as? Int, 30)
    }

    func testChunkedBodyThatNeverStartsGets408() throws {
        let harness = try SessionHarness(top: "timeouts: {clientHeader: 1s}")
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("POST http://api.test/x HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertTrue(session.exchangeTimer.isScheduled)
        XCTAssertEqual(session.exchangeTimer.scheduledDelay, .seconds(1), "the first size line is due within clientHeader")
        session.exchangeTimer.expire()
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 408)
        XCTAssertEqual(client.ending, .closedAfterFlush, "the connection is closed")
        XCTAssertTrue(harness.backends.isEmpty)
    }

    /// Slow POST: clients dripping short bodies hold only their own connections. The body is
    /// collected before a backend connection is taken, so with every backend connection the
    /// limit allows (2 here) "in use" by drippers, another client is still answered at once (no
    /// timer runs out first), and a dripped body arrives whole.
    func testClientsDrippingBodiesDoNotHoldBackendConnections() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 2")
        let drippers = (0..<4).map { _ in harness.connectClient() }
        for client in drippers {
            client.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 100\r\n\r\n0123456789")
        }
        for _ in 0..<5 {
            for client in drippers { client.receive("0123456789") }
        }
        XCTAssertTrue(harness.backends.isEmpty, "no backend connection for a body still arriving")
        let other = harness.connectClient()
        other.receive("GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend(), "the other client waited for the drippers")
        let request = try XCTUnwrap(MemoryMessages.requests(backend.peerReads()).first)
        backend.receive(echo(request))
        XCTAssertEqual(MemoryMessages.response(other.readAll()).status, 200)
        for client in drippers { client.receive("0123456789012345678901234567890123456789") }
        // Play the backend: answer every request on every connection until all are served.
        for _ in 0..<10 {
            for stream in harness.backends where stream.isOpen {
                stream.connect()
                for request in MemoryMessages.requests(stream.peerReads()) { stream.receive(echo(request)) }
            }
        }
        XCTAssertLessThanOrEqual(harness.backends.count, 2, "within the limit")
        for client in drippers {
            let response = MemoryMessages.response(client.readAll())
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["body_len"] as? Int, 100, "the collected body arrives whole")
        }
    }

    /// A client that stops sending a body being collected gets 408 after `bodyIdle`, and the
    /// backend never hears of the request.
    func testAStalledCollectedBodyGets408() throws {
        let harness = try SessionHarness(top: "timeouts: {bodyIdle: 1s}")
        let client = harness.connectClient()
        client.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 100\r\n\r\n0123456789")
        XCTAssertEqual(client.timeouts.read, .seconds(1), "bodyIdle is 1 s")
        client.end(.timeout)
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 408)
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=http_request_error") ?? false)
        XCTAssertEqual(response.json?["error"] as? String, "http_request_error")
        XCTAssertTrue(harness.backends.isEmpty)
    }
}
