import TestSupport
import XCTest
@testable import Proxy

/// Errors the proxy answers when the backend cannot be used, over in-memory streams: a refused
/// connect, a response that is not HTTP, and a close-delimited response (relayed, not an
/// error). The kernel's ECONNREFUSED becoming ``ConnectionEnd/refused`` is checked with sockets
/// in the EventLoop and happy-eyeballs tests.
final class ClientSessionUpstreamErrorTests: XCTestCase {
    func testRefusedConnectionIs502ConnectionRefused() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        // Every connection the proxy opens (a refused one may be retried) is refused.
        var refused = 0
        while let backend = harness.backends.last, backend.isOpen, !backend.isConnected, refused < 10 {
            backend.end(.refused)
            refused += 1
        }
        XCTAssertGreaterThan(refused, 0)
        XCTAssertTrue(harness.backends.allSatisfy { !$0.isOpen }, "no connection is left open")
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 502, response.text)
        XCTAssertEqual(response.json?["error"] as? String, "connection_refused")
        XCTAssertTrue(response.header("Proxy-Status")?.contains("error=connection_refused") ?? false)
    }

    func testMalformedUpstreamResponseIs502AndConnectionDiscarded() throws {
        let harness = try SessionHarness()
        let answers = ["/malformed": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello",
                       "/garbage": "NOT HTTP AT ALL\r\n\r\n"]
        for path in ["/malformed", "/garbage"] {
            let client = harness.connectClient()
            client.receive("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend(), path)
            XCTAssertEqual(MemoryMessages.requests(backend.peerReads()).map(\.target), [path])
            backend.receive(answers[path]!)
            let response = MemoryMessages.response(client.readAll())
            XCTAssertEqual(response.status, 502, path)
            XCTAssertEqual(response.json?["error"] as? String, "http_protocol_error", path)
            XCTAssertEqual(backend.ending, .closed, "\(path): the connection is discarded, never pooled")
        }
        // The next request works, on a fresh upstream connection.
        let client = harness.connectClient()
        client.receive("GET /fine HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertEqual(MemoryMessages.requests(backend.peerReads()).map(\.target), ["/fine"])
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
        XCTAssertEqual(harness.backends.count, 3)
    }

    func testCloseDelimitedResponseIsRelayed() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET /nocl HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let first = try XCTUnwrap(harness.connectedBackend())
        first.receive("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nclose-delimited body\n")
        first.end(.endOfStream)
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "close-delimited body\n")
        XCTAssertEqual(client.ending, .open)
        client.clearDelivered()
        client.receive("GET /again HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let second = try XCTUnwrap(harness.connectedBackend())
        XCTAssertFalse(second === first, "the closed connection is not reused")
        XCTAssertEqual(MemoryMessages.requests(second.peerReads()).map(\.target), ["/again"])
        second.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
    }
}
