import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A client that leaves mid-transfer over in-memory streams (``SessionHarness``): a download
/// it stops reading, or an upload the proxy had paused on a backend that reads slowly, ends
/// the backend side at once, by a reset that drops what was still queued for the backend.
/// (Leaving in each phase of an exchange: ``ClientSessionTests``; a paused socket that notices
/// its peer leaving, with real kernel buffers: ``SlowReaderBackpressureTests``.)
final class ClientSessionClientAbortTests: XCTestCase {
    private let leavings: [(name: String, end: ConnectionEnd)] = [("close", .endOfStream), ("reset", .socketError(errno: ECONNRESET))]

    private func chunk(_ size: Int) -> [UInt8] { Array(String(size, radix: 16).utf8) + [13, 10] + [UInt8](repeating: 0x78, count: size) + [13, 10] }

    /// A chunked download (16 KiB chunks): the client reads its whole first chunk and leaves
    /// (a trickle), or reads 1 KiB of a flood that has paused the backend and leaves.
    func testAClientThatLeavesStopsADownload() throws {
        for (name, end) in leavings {
            for flood in [false, true] {
                let harness = try SessionHarness()
                let client = harness.connectClient()
                client.receive("GET http://api.test/stream HTTP/1.1\r\nHost: api.test\r\n\r\n")
                let backend = try XCTUnwrap(harness.connectedBackend())
                _ = backend.peerReads()
                backend.receive("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                backend.receive(chunk(16384))
                if flood {
                    for _ in 0..<1000 where backend.isReading { backend.receive(chunk(16384)) }
                    XCTAssertFalse(backend.isReading, "a client that does not read pauses the flood")
                    XCTAssertEqual(client.peerReads(max: 1024).count, 1024)
                } else {
                    let response = client.readAll()
                    XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n"), response)
                    XCTAssertTrue(response.hasSuffix("\r\n\r\n4000\r\n" + String(repeating: "x", count: 16384) + "\r\n"), "the whole first chunk")
                }
                XCTAssertTrue(client.isReading, "the client is read during the response: its leaving is an ordinary read")
                client.end(end)
                let label = "\(name), \(flood ? "flood" : "trickle")"
                XCTAssertEqual(backend.ending, .reset, "the backend request must not outlive its client (\(label))")
                XCTAssertEqual(client.ending, .closed, label)
                XCTAssertEqual(harness.pooled("active") + harness.pooled("idle") + harness.pooled("connecting"), 0, label)
            }
        }
    }

    /// An upload larger than the window to a backend that reads 16 KiB at a time: the proxy
    /// stops reading the client; the client leaves (close or reset) and the upstream request is
    /// reset at once, not closed behind the bytes still queued toward the backend.
    func testAClientThatLeavesStopsItsPausedUpload() throws {
        for (name, end) in leavings {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("POST http://api.test/slow-upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 50000000\r\n\r\n")
            // 1 MiB, 64 KiB per read as a socket hands it over.
            for _ in 0..<16 { client.receive([UInt8](repeating: 0x61, count: 64 * 1024)) }
            let backend = try XCTUnwrap(harness.connectedBackend())
            XCTAssertFalse(client.isReading, "the backend is behind: the proxy paused the upload (\(name))")
            for _ in 0..<3 {
                XCTAssertEqual(backend.peerReads(max: 16384).count, 16384)
                client.deliver()
            }
            XCTAssertFalse(client.isReading, "the backend reads slowly: still paused (\(name))")
            XCTAssertFalse(client.unread.isEmpty, "the rest of the upload waits in the client's socket (\(name))")
            XCTAssertEqual(harness.pooled("active"), 1)
            let queued = backend.output.count
            XCTAssertGreaterThan(queued, 0)
            client.end(end)
            XCTAssertEqual(backend.ending, .reset, "the upstream request was not aborted (\(name))")
            XCTAssertEqual(backend.droppedAtClose, queued, "what was queued for the backend is dropped, not sent (\(name))")
            XCTAssertEqual(harness.pooled("active") + harness.pooled("idle") + harness.pooled("connecting"), 0, name)
        }
    }

    /// A download of known length whose client leaves with at most 1 MiB to come: the rest is
    /// read and dropped, and the connection serves the next request (no new connection, no new
    /// TLS handshake). Counted, and the exchange logged as the client's abort.
    func testAClientThatLeavesAShortRestKeepsTheBackendConnection() throws {
        for (name, end) in leavings {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET http://api.test/file HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = backend.peerReads()
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + String(repeating: "a", count: 100_000))
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 200 OK\r\n"))
            client.end(end)
            XCTAssertEqual(client.ending, .closed, name)
            XCTAssertEqual(backend.ending, .open, "the rest is drained, not reset (\(name))")
            XCTAssertEqual(harness.pooled("active"), 1, "the drain holds it until the response ends (\(name))")
            // The rest arrives split, the last piece with the end of the body.
            backend.receive(String(repeating: "b", count: 150_000))
            backend.receive(String(repeating: "c", count: 50_000))
            XCTAssertEqual(harness.pooled("idle"), 1, "back in the pool once the response is complete (\(name))")
            XCTAssertEqual(harness.context.metrics.drainedResponses, 1)
            let next = harness.connectClient()
            next.receive("GET http://api.test/again HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(harness.backends.count, 1, "the next request takes the kept connection (\(name))")
            XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /again HTTP/1.1\r\n"), name)
            backend.receive("HTTP/1.1 204 No Content\r\n\r\n")
            XCTAssertTrue(next.readAll().hasPrefix("HTTP/1.1 204 No Content\r\n"), name)
        }
    }

    /// What a drain does not keep: more than 1 MiB left (reset at once, as before), bytes beyond
    /// the response, a backend that closes or stalls during the drain (closed, never pooled),
    /// and a connection a queued request needs.
    func testADrainKeepsOnlyAConnectionThatEndsItsResponseCleanly() throws {
        func leaving(left: Int) throws -> (SessionHarness, MemoryStream) {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET http://api.test/file HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = backend.peerReads()
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: \(left + 10)\r\n\r\n0123456789")
            _ = client.readAll()
            client.end(.endOfStream)
            return (harness, backend)
        }
        let (big, bigBackend) = try leaving(left: Exchange.drainLimit + 1)
        XCTAssertEqual(bigBackend.ending, .reset, "more than the limit left: the backend learns at once")
        XCTAssertEqual(big.pooled("active") + big.pooled("idle"), 0)
        let (beyond, beyondBackend) = try leaving(left: 5)
        beyondBackend.receive("abcdeHTTP/1.1 200 OK\r\n")
        XCTAssertNotEqual(beyondBackend.ending, .open, "bytes beyond the response: never pooled")
        XCTAssertEqual(beyond.pooled("idle"), 0)
        let (closes, closesBackend) = try leaving(left: 1000)
        closesBackend.end(.endOfStream)
        XCTAssertNotEqual(closesBackend.ending, .open)
        XCTAssertEqual(closes.pooled("active") + closes.pooled("idle"), 0, "a backend that closes mid-drain is closed")
        let (stalls, stallsBackend) = try leaving(left: 1000)
        stallsBackend.end(.timeout)
        XCTAssertNotEqual(stallsBackend.ending, .open)
        XCTAssertEqual(stalls.pooled("active") + stalls.pooled("idle"), 0, "a backend that stalls is ended by its read timeout")
    }

    /// A client that leaves before the response head: the drain waits for the head (briefly),
    /// then keeps the connection for a short body of known length (after any interim head),
    /// and closes it for a stream, a long body, a close, or a backend that does not answer.
    func testAClientThatLeavesBeforeTheHeadKeepsTheConnectionForAShortAnswer() throws {
        func leftBeforeTheHead() throws -> (SessionHarness, MemoryStream) {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET http://api.test/slow HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = backend.peerReads()
            client.end(.endOfStream)
            XCTAssertEqual(client.ending, .closed)
            XCTAssertEqual(backend.ending, .open, "the request was sent whole: its answer is awaited")
            return (harness, backend)
        }
        for answer in ["HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"] {
            // Split at every byte: inside the interim head, the final head and the body, the
            // drain reads each head from its start and pools only at the body's last byte.
            let bytes = Array(answer.utf8)
            for split in 1..<bytes.count {
                let (harness, backend) = try leftBeforeTheHead()
                backend.receive(Array(bytes[..<split]))
                XCTAssertEqual(harness.pooled("idle"), 0, "\(answer.debugDescription) cut at \(split): not complete yet")
                backend.receive(Array(bytes[split...]))
                XCTAssertEqual(harness.pooled("idle"), 1, "\(answer.debugDescription) cut at \(split)")
                XCTAssertEqual(backend.ending, .open)
                XCTAssertEqual(harness.context.metrics.drainedResponses, 1)
            }
        }
        for (label, answer) in [("a stream", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                                ("a long body", "HTTP/1.1 200 OK\r\nContent-Length: \(Exchange.drainLimit + 1)\r\n\r\n"),
                                ("a close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
                                ("a malformed head", "HTTP/1.1 2x0 OK\r\n\r\n")] {
            let (harness, backend) = try leftBeforeTheHead()
            backend.receive(answer)
            XCTAssertNotEqual(backend.ending, .open, label)
            XCTAssertEqual(harness.pooled("idle") + harness.pooled("active"), 0, label)
            XCTAssertEqual(harness.context.metrics.drainedResponses, 0, label)
        }
        let (silent, silentBackend) = try leftBeforeTheHead()
        XCTAssertEqual(silentBackend.timeouts.read, UpstreamDrain.headWait, "the head is awaited briefly")
        silentBackend.end(.timeout)
        XCTAssertNotEqual(silentBackend.ending, .open)
        XCTAssertEqual(silent.pooled("idle") + silent.pooled("active"), 0, "a backend that does not answer in time is closed")
    }
}
