import Config
@_spi(Testing) import EventLoop
import Foundation
import Glibc
import Logging
import TestSupport
import TokenManager
import XCTest
@testable import Proxy

/// Response spooling over in-memory streams (``SessionHarness``; the spool files are real): a
/// client that reads more slowly than its backend sends no longer holds the backend
/// connection. The rest of the response goes to a spool file and the connection goes back to
/// the pool; the client still gets every byte, in order, in every framing. Budgets and bodies
/// are scaled down (a response of 1–2 MiB against windows of 256 KiB) and keep the ratios of
/// the multi-megabyte cases. (What the kernel's buffers make a backend send: ``SlowReaderBackpressureTests``.)
final class ClientSessionSpoolTests: XCTestCase {
    private let get = "GET http://api.test/download HTTP/1.1\r\nHost: api.test\r\n\r\n"

    /// `size` bytes of a printable pattern (the responses are parsed as text).
    private func pattern(_ size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var x: UInt32 = 2463534242
        for i in 0..<size { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = 0x61 + UInt8(x % 26) }
        return bytes
    }

    /// A backend sending a response as fast as the proxy reads it, never more.
    private final class Feed {
        let backend: MemoryStream
        let bytes: [UInt8]
        let closeAtEnd: Bool
        private var offset = 0
        init(_ backend: MemoryStream, _ bytes: [UInt8], closeAtEnd: Bool) {
            self.backend = backend
            self.bytes = bytes
            self.closeAtEnd = closeAtEnd
        }
        var done: Bool { offset == bytes.count }
        /// Sends while the proxy reads; returns how many bytes went.
        @discardableResult
        func pump() -> Int {
            let start = offset
            while offset < bytes.count && backend.isReading && backend.isOpen {
                let end = min(offset + 32 * 1024, bytes.count)
                backend.receive(Array(bytes[offset..<end]))
                offset = end
                if offset == bytes.count && closeAtEnd { backend.end(.endOfStream) }
            }
            return offset - start
        }
    }

    /// A client that asks for a response of `size` bytes (`mode`: `cl`, `chunked` or `close`)
    /// and reads nothing yet; the backend sends until the proxy stops reading it.
    private func slowReader(_ harness: SessionHarness, size: Int, mode: String) throws -> (client: MemoryStream, feed: Feed, body: [UInt8]) {
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /download "))
        let body = pattern(size)
        var wire: [UInt8]
        switch mode {
        case "cl":
            wire = Array("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n".utf8) + body
        case "chunked":
            wire = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
            for start in stride(from: 0, to: size, by: 50_000) {
                let end = min(start + 50_000, size)
                wire += Array("\(String(end - start, radix: 16))\r\n".utf8) + body[start..<end] + [13, 10]
            }
            wire += Array("0\r\n\r\n".utf8)
        default:
            wire = Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8) + body
        }
        let feed = Feed(backend, wire, closeAtEnd: mode == "close")
        feed.pump()
        return (client, feed, body)
    }

    /// The client reads everything, 64 KiB at a time, while the backends send what they can.
    private func readResponse(_ client: MemoryStream, feeds: [Feed] = []) -> TestResponse {
        while true {
            let sent = feeds.reduce(0) { $0 + $1.pump() }
            if client.peerReads(max: 64 * 1024).isEmpty && sent == 0 { break }
        }
        let response = MemoryMessages.response(String(decoding: client.delivered, as: UTF8.self))
        client.clearDelivered()
        return response
    }

    /// Another client's request, answered by a backend at once; its status.
    private func otherRequest(_ harness: SessionHarness, _ client: MemoryStream? = nil) throws -> Int {
        let other = client ?? harness.connectClient()
        other.receive("GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend(), "no backend connection for the request")
        XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /x "), "the request went out at once")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let status = MemoryMessages.response(other.readAll()).status
        other.clearDelivered()
        return status
    }

    /// For each framing: once the slow reader's response is spooled, its backend connection is
    /// free, so another request (the limit is 1) is answered at once; the slow reader then gets
    /// the whole body intact and its connection stays usable, and the spool is emptied.
    func testASlowReaderDoesNotHoldTheBackendInAnyFraming() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: 1 << 30)
        let size = 1024 * 1024 + 5
        for (index, mode) in ["cl", "chunked", "close"].enumerated() {
            let slow = try slowReader(harness, size: size, mode: mode)
            XCTAssertTrue(slow.feed.done, "\(mode): the backend sent everything")
            XCTAssertEqual(harness.context.metrics.spooledResponses, UInt64(index + 1), "\(mode): the response is spooled")
            XCTAssertGreaterThan(harness.context.spoolBudget.inUse, 0, "\(mode): the response is spooled")
            XCTAssertEqual(harness.pooled("active"), 0, "\(mode): the backend connection is released before the client has read the response")
            XCTAssertEqual(try otherRequest(harness), 200, "\(mode): the other request did not wait for the slow reader")

            let response = readResponse(slow.client)
            XCTAssertEqual(response.status, 200, mode)
            XCTAssertEqual(response.body.count, size, mode)
            XCTAssertEqual(sha256Hex(response.body), sha256Hex(slow.body), "\(mode): every byte, in order")
            if mode == "close" { XCTAssertEqual(response.header("Transfer-Encoding"), "chunked") }
            XCTAssertEqual(try otherRequest(harness, slow.client), 200, "\(mode): the client connection is kept after a spooled response")
            XCTAssertEqual(harness.context.spoolBudget.inUse, 0, "\(mode): the spool is given back")
        }
    }

    /// A budget smaller than the response: 64 KiB are spooled, then the backend waits for the
    /// client as it would without a spool, and the response still arrives whole as the client
    /// catches up through file, memory and socket.
    func testAFullBudgetHoldsTheBackendAndLosesNothing() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: 64 * 1024)
        let slow = try slowReader(harness, size: 1024 * 1024, mode: "chunked")
        XCTAssertGreaterThan(harness.context.spoolBudget.inUse, 0)
        XCTAssertLessThanOrEqual(harness.context.spoolBudget.inUse, 64 * 1024, "the budget bounds the spool")
        XCTAssertFalse(slow.feed.done)
        XCTAssertEqual(harness.pooled("active"), 1, "past the budget the slow reader holds its backend connection")
        let response = readResponse(slow.client, feeds: [slow.feed])
        XCTAssertEqual(response.body.count, 1024 * 1024)
        XCTAssertEqual(sha256Hex(response.body), sha256Hex(slow.body), "every byte, in order")
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
    }

    /// A client that stopped reading holds the only backend connection (the spool is off, or
    /// full): a request that must queue for it takes it over at once. The stalled response is
    /// cut short (the client sees an abortive close, never a clean end), the waiting request is
    /// answered at once rather than after `connect` with a 503.
    func testARequestThatWouldQueueTakesTheConnectionOfAClientThatStoppedReading() throws {
        for budget in [0, 64 * 1024] {
            let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: budget)
            let slow = try slowReader(harness, size: 1024 * 1024, mode: "cl")
            XCTAssertEqual(harness.pooled("active"), 1, "maxBytes \(budget)")
            let other = harness.connectClient()
            XCTAssertEqual(try otherRequest(harness, other), 200, "maxBytes \(budget)")
            XCTAssertEqual(harness.context.metrics.stalledClientsCut, 1)
            let cut = readResponse(slow.client)
            XCTAssertEqual(slow.client.ending, .closed, "the cut response must not look complete")
            XCTAssertLessThan(cut.body.count, 1024 * 1024, "the cut response must not look complete")
            XCTAssertEqual(harness.context.clientConnections, 1, "the other client is still connected")
            other.end(.endOfStream)
            XCTAssertEqual(harness.context.clientConnections, 0)
            XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
        }
    }

    /// A response of known length is spooled whole or not at all: one larger than what is left
    /// of the budget holds its backend connection from the start (it stays a candidate to give
    /// the connection up), rather than filling the budget and holding it anyway. A chunked one
    /// spools what fits.
    func testAKnownLengthThatDoesNotFitIsNotSpooled() throws {
        let budget = 512 * 1024
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: budget)
        let cl = try slowReader(harness, size: 1024 * 1024, mode: "cl")
        XCTAssertEqual(harness.pooled("active"), 1)
        XCTAssertEqual(harness.context.metrics.spooledResponses, 0)
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
        XCTAssertEqual(readResponse(cl.client, feeds: [cl.feed]).body.count, 1024 * 1024)
        // Once the reader caught up, what was left of the known length may fit and spool when it
        // falls behind again: count from here.
        let spooledBefore = harness.context.metrics.spooledResponses
        let chunked = try slowReader(harness, size: 1024 * 1024, mode: "chunked")
        XCTAssertEqual(harness.context.metrics.spooledResponses, spooledBefore + 1)
        XCTAssertEqual(harness.context.spoolBudget.inUse, budget, "a body of unknown length spools up to the budget")
        XCTAssertEqual(readResponse(chunked.client, feeds: [chunked.feed]).body.count, 1024 * 1024)
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
    }

    /// Many slow readers and a budget for two of their responses: exactly two are spooled and
    /// give their connections back; the others hold theirs, and every one of them still gets
    /// its whole response.
    func testABudgetForTwoSpoolsTwoOfManyAndTheRestHold() throws {
        let size = 2 * 1024 * 1024
        let harness = try SessionHarness(spoolBytes: size * 5 / 2)
        let readers = try (0..<6).map { _ in try slowReader(harness, size: size, mode: "cl") }
        for reader in readers { reader.feed.pump() }
        XCTAssertEqual(harness.context.metrics.spooledResponses, 2)
        XCTAssertEqual(harness.pooled("active"), 4,
                       "the two spooled responses gave their connections back (\(harness.pooled("active")) active)")
        for reader in readers {
            XCTAssertEqual(readResponse(reader.client, feeds: readers.map(\.feed)).body.count, size)
        }
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
    }

    /// `maxBytes: 0` turns spooling off: nothing is spooled and the backend waits for the client.
    func testSpoolingCanBeTurnedOff() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: 0)
        let slow = try slowReader(harness, size: 1024 * 1024, mode: "cl")
        XCTAssertFalse(slow.feed.done)
        XCTAssertEqual(harness.context.metrics.spooledResponses, 0)
        XCTAssertEqual(harness.pooled("active"), 1)
        XCTAssertEqual(readResponse(slow.client, feeds: [slow.feed]).body.count, 1024 * 1024)
    }

    /// A slow reader that leaves while its response is spooled: the spool is closed and its
    /// budget given back, and the pooled backend connection stays usable.
    func testAClientThatLeavesFreesItsSpool() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: 1 << 30)
        let slow = try slowReader(harness, size: 1024 * 1024, mode: "cl")
        XCTAssertGreaterThan(harness.context.spoolBudget.inUse, 0)
        XCTAssertEqual(harness.pooled("active"), 0)
        slow.client.end(.socketError(errno: ECONNRESET))
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0, "the spool went with its client")
        XCTAssertEqual(harness.context.clientConnections, 0, "the spool went with its client")
        let directory = try XCTUnwrap(harness.spoolDirectory)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [], "spool files have no name")
        XCTAssertEqual(try otherRequest(harness), 200)
        XCTAssertEqual(harness.backends.count, 1, "the released connection was pooled and reused")
    }

    /// The disk refuses a spool write (a full disk, simulated by a file size limit on this
    /// process): the client gets a truncated response, never a clean one missing bytes, and
    /// the budget is given back.
    func testASpoolWriteFailureTruncatesTheResponse() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1", spoolBytes: 1 << 30)
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        let saved = limit
        let previous = signal(SIGXFSZ, SIG_IGN)
        limit.rlim_cur = 256 * 1024
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        defer {
            var restore = saved
            setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &restore)
            signal(SIGXFSZ, previous)
        }
        let slow = try slowReader(harness, size: 1024 * 1024, mode: "cl")
        XCTAssertEqual(harness.context.metrics.spooledResponses, 1)
        let response = readResponse(slow.client, feeds: [slow.feed])
        XCTAssertLessThan(response.body.count, 1024 * 1024, "a response cut short must not look complete")
        XCTAssertNotEqual(slow.client.ending, .open,
                          "the connection is closed short of the Content-Length: the client sees the cut, never a clean end")
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0)
    }

    /// A spool directory where no file can be created stops the proxy at start (before it
    /// listens) with a message naming the key; with spooling off the directory is not used.
    func testAnUnusableSpoolDirectoryIsAStartError() throws {
        let directory = NSTemporaryDirectory() + "spool-\(UUID().uuidString)"
        func server(_ spool: String) throws -> ProxyServer {
            let config = try ConfigLoader.parse(yaml: """
                listen: "127.0.0.1:0"
                spool: \(spool)
                credentials:
                  api: {type: static, token: "tok-1"}
                routes:
                  - host: "api.test"
                    upstream: "http://127.0.0.1:1"
                    credential: api
                """, file: "spool.yaml", environment: [:])
            var logger = Logger(label: "spool-test")
            logger.logLevel = .critical
            return try ProxyServer(config: config, credentials: CredentialSet([FixedCredential()]), logger: logger)
        }
        XCTAssertThrowsError(try server("{directory: \"\(directory)/missing\"}")) { error in
            let text = String(describing: error)
            XCTAssertTrue(text.hasPrefix("spool.directory: cannot create a file in \(directory)/missing: No such file or directory"), text)
        }
        XCTAssertNoThrow(try server("{directory: \"\(directory)/missing\", maxBytes: 0}"))
    }
}
