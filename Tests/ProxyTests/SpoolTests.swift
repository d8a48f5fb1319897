import Foundation
import Glibc
import Proxy
import TestSupport
import XCTest

/// Response spooling: a client that reads more slowly than its backend sends no longer holds
/// the backend connection. The rest of the response goes to a spool file and the connection
/// goes back to the pool; the client still gets every byte, in order, in every framing.
final class SpoolTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// One connection to the backend at most, spooling into the test's directory.
    private func proxy(_ backend: Backend, maxBytes: String = "1GiB", timeouts: String? = nil) throws -> ProxyHarness {
        try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)", timeouts: timeouts, top: """
            maxConnectionsPerUpstream: 1
            spool: {directory: "\(directory)", maxBytes: \(maxBytes)}
            """))
    }

    /// A client with a 4 KiB receive buffer that asks for `size` bytes and reads nothing yet.
    private func slowReader(_ proxy: ProxyHarness, size: Int, mode: String) throws -> RawClient {
        let client = try RawClient(port: proxy.port, timeout: 20, receiveBuffer: 4096)
        client.send("GET /download?size=\(size)&mode=\(mode) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        return client
    }

    private func activeBackendConnections(_ proxy: ProxyHarness) -> Int {
        proxy.metrics().upstreamConnections.filter { $0.key.state == "active" }.values.reduce(0, +)
    }

    private func expectedDigest(_ proxy: ProxyHarness, size: Int) throws -> String {
        let client = try RawClient(port: proxy.port)
        client.send("GET /download-sha?size=\(size) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        return try client.readResponse().text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// For each framing: once the slow reader's response is spooled, its backend connection is
    /// free, so another request (the limit is 1) is answered at once; the slow reader then gets
    /// the whole body intact and its connection stays usable, and the spool is emptied.
    func testASlowReaderDoesNotHoldTheBackendInAnyFraming() throws {
        let backend = try Backend()
        let proxy = try proxy(backend)
        let size = 12 * 1024 * 1024 + 5
        let digest = try expectedDigest(proxy, size: size)
        for (index, mode) in ["cl", "chunked", "close"].enumerated() {
            let slow = try slowReader(proxy, size: size, mode: mode)
            XCTAssertTrue(eventually { let m = proxy.metrics(); return m.spooledResponses == UInt64(index + 1) && m.spoolBytes > 0 },
                          "\(mode): the response is spooled")
            XCTAssertTrue(eventually { activeBackendConnections(proxy) == 0 },
                          "\(mode): the backend connection is released before the client has read the response")
            let other = try RawClient(port: proxy.port, timeout: 3)
            let started = Date()
            other.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try other.readResponse().status, 200, mode)
            XCTAssertLessThan(Date().timeIntervalSince(started), 2, "\(mode): the other request did not wait for the slow reader")

            let response = try slow.readResponse()
            XCTAssertEqual(response.status, 200, mode)
            XCTAssertEqual(response.body.count, size, mode)
            XCTAssertTrue(digest.contains(sha256Hex(response.body)), "\(mode): every byte, in order")
            if mode == "close" { XCTAssertEqual(response.header("Transfer-Encoding"), "chunked") }
            slow.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try slow.readResponse().status, 200, "\(mode): the client connection is kept after a spooled response")
            XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 0 }, "\(mode): the spool is given back")
        }
    }

    /// A budget smaller than the response: 64 KiB are spooled, then the backend waits for the
    /// client as it would without a spool, and the response still arrives whole as the client
    /// catches up through file, memory and socket.
    func testAFullBudgetHoldsTheBackendAndLosesNothing() throws {
        let backend = try Backend()
        let proxy = try proxy(backend, maxBytes: "64KiB")
        let size = 12 * 1024 * 1024
        let digest = try expectedDigest(proxy, size: size)
        let slow = try slowReader(proxy, size: size, mode: "chunked")
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes > 0 })
        Thread.sleep(forTimeInterval: 0.3)
        let held = proxy.metrics()
        XCTAssertLessThanOrEqual(held.spoolBytes, 64 * 1024, "the budget bounds the spool")
        XCTAssertEqual(activeBackendConnections(proxy), 1, "past the budget the slow reader holds its backend connection")
        let response = try slow.readResponse()
        XCTAssertEqual(response.body.count, size)
        XCTAssertTrue(digest.contains(sha256Hex(response.body)), "every byte, in order")
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 0 })
    }

    /// A client that stopped reading holds the only backend connection (the spool is off, or
    /// full): a request that must queue for it takes it over at once. The stalled response is
    /// cut short (the client sees a reset, never a clean end), the waiting request is answered
    /// within the test's 2 s rather than after `connect` (5 s) with a 503.
    func testARequestThatWouldQueueTakesTheConnectionOfAClientThatStoppedReading() throws {
        for maxBytes in ["0", "64KiB"] {
            let backend = try Backend()
            let proxy = try proxy(backend, maxBytes: maxBytes)
            let slow = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "cl")
            XCTAssertTrue(eventually { self.activeBackendConnections(proxy) == 1 })
            Thread.sleep(forTimeInterval: 0.3)
            let other = try RawClient(port: proxy.port, timeout: 2)
            other.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try other.readResponse().status, 200, "maxBytes \(maxBytes)")
            XCTAssertEqual(proxy.metrics().stalledClientsCut, 1)
            XCTAssertThrowsError(try slow.readResponse(), "the cut response must not look complete")
            other.close()
            XCTAssertTrue(eventually { let m = proxy.metrics(); return m.clientConnections == 0 && m.spoolBytes == 0 })
        }
    }

    /// A response of known length is spooled whole or not at all: one larger than what is left
    /// of the budget holds its backend connection from the start (it stays a candidate to give
    /// the connection up), rather than filling the budget and holding it anyway. A chunked one
    /// spools what fits.
    func testAKnownLengthThatDoesNotFitIsNotSpooled() throws {
        let backend = try Backend()
        let proxy = try proxy(backend, maxBytes: "8MiB")
        let cl = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "cl")
        XCTAssertTrue(eventually { self.activeBackendConnections(proxy) == 1 })
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(proxy.metrics().spooledResponses, 0)
        XCTAssertEqual(proxy.metrics().spoolBytes, 0)
        XCTAssertEqual(try cl.readResponse().body.count, 12 * 1024 * 1024)
        // Once the reader caught up, what was left of the known length may fit and spool when it
        // falls behind again (a machine under load makes that likely): count from here.
        let spooledBefore = proxy.metrics().spooledResponses
        let chunked = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "chunked")
        XCTAssertTrue(eventually { proxy.metrics().spooledResponses == spooledBefore + 1 })
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 8 * 1024 * 1024 }, "a body of unknown length spools up to the budget")
        XCTAssertEqual(try chunked.readResponse().body.count, 12 * 1024 * 1024)
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 0 })
    }

    /// Many slow readers and a budget for two of their responses: exactly two are spooled and
    /// give their connections back; the others hold theirs, and every one of them still gets
    /// its whole response.
    func testABudgetForTwoSpoolsTwoOfManyAndTheRestHold() throws {
        let backend = try Backend()
        let size = 12 * 1024 * 1024
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)", top: """
            spool: {directory: "\(directory)", maxBytes: \(size * 5 / 2)}
            """))
        let readers = try (0..<6).map { _ in try slowReader(proxy, size: size, mode: "cl") }
        XCTAssertTrue(eventually { proxy.metrics().spooledResponses == 2 })
        XCTAssertTrue(eventually { self.activeBackendConnections(proxy) == 4 },
                      "the two spooled responses gave their connections back (\(activeBackendConnections(proxy)) active)")
        for reader in readers { XCTAssertEqual(try reader.readResponse().body.count, size) }
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 0 })
    }

    /// `maxBytes: 0` turns spooling off: nothing is spooled and the backend waits for the client.
    func testSpoolingCanBeTurnedOff() throws {
        let backend = try Backend()
        let proxy = try proxy(backend, maxBytes: "0")
        let slow = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "cl")
        Thread.sleep(forTimeInterval: 0.5)
        let metrics = proxy.metrics()
        XCTAssertEqual(metrics.spooledResponses, 0)
        XCTAssertEqual(activeBackendConnections(proxy), 1)
        XCTAssertEqual(try slow.readResponse().body.count, 12 * 1024 * 1024)
    }

    /// A slow reader that leaves while its response is spooled: the spool is closed and its
    /// budget given back, and the pooled backend connection stays usable.
    func testAClientThatLeavesFreesItsSpool() throws {
        let backend = try Backend()
        let proxy = try proxy(backend)
        let slow = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "cl")
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes > 0 })
        XCTAssertTrue(eventually { activeBackendConnections(proxy) == 0 })
        slow.close(reset: true)
        XCTAssertTrue(eventually { let m = proxy.metrics(); return m.spoolBytes == 0 && m.clientConnections == 0 },
                      "the spool went with its client")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [], "spool files have no name")
        let other = try RawClient(port: proxy.port, timeout: 3)
        other.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try other.readResponse().status, 200)
        XCTAssertEqual(backend.connections().count, 1, "the released connection was pooled and reused")
    }

    /// The disk refuses a spool write (a full disk, simulated by a file size limit on this
    /// process): the client gets a truncated response, never a clean one missing bytes, and
    /// the budget is given back.
    func testASpoolWriteFailureTruncatesTheResponse() throws {
        let backend = try Backend()
        let proxy = try proxy(backend)
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
        let slow = try slowReader(proxy, size: 12 * 1024 * 1024, mode: "cl")
        XCTAssertTrue(eventually { proxy.metrics().spooledResponses == 1 })
        XCTAssertThrowsError(try slow.readResponse(), "a response cut short must not look complete")
        XCTAssertTrue(slow.peerClosed)
        XCTAssertTrue(eventually { proxy.metrics().spoolBytes == 0 })
    }

    /// A spool directory where no file can be created stops the proxy at start with a message
    /// naming the key; with spooling off the directory is not used.
    func testAnUnusableSpoolDirectoryIsAStartError() throws {
        let yaml = ProxyHarness.yaml(upstream: "http://127.0.0.1:1", top: "spool: {directory: \"\(directory)/missing\"}")
        XCTAssertThrowsError(try ProxyHarness(yaml: yaml)) { error in
            let text = String(describing: error)
            XCTAssertTrue(text.hasPrefix("spool.directory: cannot create a file in \(directory)/missing: No such file or directory"), text)
        }
        let off = ProxyHarness.yaml(upstream: "http://127.0.0.1:1", top: "spool: {directory: \"\(directory)/missing\", maxBytes: 0}")
        XCTAssertNoThrow(try ProxyHarness(yaml: off))
    }
}
