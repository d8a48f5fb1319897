import EventLoop
import Glibc
import XCTest

/// The plain-socket channel (accepted connections and connects to an address) at its edges:
/// bodies larger than every buffer, a reader that pauses, a peer that never reads, a peer that
/// leaves while paused, refusals and timeouts. Real sockets on 127.0.0.1, one loop per test.
final class SocketChannelTests: XCTestCase {
    /// Runs `loop` until something stops it, at most `seconds`.
    private func run(_ loop: EventLoop, seconds: Int = 10) {
        let guardTimer = Timer(on: loop, after: .seconds(seconds)) { loop.stop() }
        loop.run()
        guardTimer.cancel()
    }

    private func listen(on loop: EventLoop, _ accepted: @escaping (any ByteStream) -> Void) throws -> (Listener, SocketAddress) {
        let listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop, onAccept: accepted)
        return (listener, try SocketAddress(host: "127.0.0.1", port: listener.address.port))
    }

    private static func payload(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
    }

    // MARK: - reading

    /// A consumer that takes 4 KiB per millisecond behind a 16 KiB high watermark: 2 MiB arrive
    /// whole and in order, and the input never holds more than the watermark.
    func testHighWatermarkBoundsTheInputAndLosesNothing() throws {
        let loop = try EventLoop()
        let sent = Self.payload(2 * 1024 * 1024)
        let reader = SlowReader(loop: loop, expected: sent.count, watermark: 16 * 1024)
        let (listener, address) = try listen(on: loop) { reader.adopt($0) }
        let writer = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        writer.write(sent)
        run(loop, seconds: 20)
        XCTAssertEqual(reader.received.count, sent.count)
        XCTAssertTrue(reader.received == sent, "bytes arrive whole and in order")
        XCTAssertLessThanOrEqual(reader.largestInput, 16 * 1024, "reading stops at the high watermark")
        XCTAssertGreaterThan(reader.pauses, 0, "the watermark was reached and reading resumed")
        withExtendedLifetime((listener, writer)) {}
    }

    /// A consumer that needs more bytes at once than the high watermark lets in (a chunked
    /// body's trailer section) waits with the input at the limit; raising the limit resumes
    /// reading at once, though the input itself never changed.
    func testRaisingTheHighWatermarkWhileSuspendedResumesReading() throws {
        let loop = try EventLoop()
        let waiter = WholeMessageWaiter(needs: 40_000, loop: loop)
        let (listener, address) = try listen(on: loop) { connection in
            connection.delegate = waiter
            connection.setReadHighWatermark(16 * 1024)
            connection.startReading()
            waiter.connection = connection
        }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        client.write(Self.payload(40_000))
        let raise = Timer(on: loop, after: .milliseconds(300)) {
            waiter.heldAtOldLimit = waiter.connection?.input.count ?? -1
            waiter.connection?.setReadHighWatermark(64 * 1024)
        }
        run(loop, seconds: 5)
        XCTAssertEqual(waiter.heldAtOldLimit, 16 * 1024, "reading stopped at the old limit")
        XCTAssertTrue(waiter.complete, "the whole message arrived once the limit was raised")
        withExtendedLifetime((listener, client, raise)) {}
    }

    /// Paused reading delivers nothing more, however much the peer sends; resuming delivers
    /// everything that waited.
    func testPausedReadingDeliversNothingUntilResumed() throws {
        let loop = try EventLoop()
        let pauser = Pauser()
        let (listener, address) = try listen(on: loop) { connection in
            pauser.connection = connection
            connection.delegate = pauser
            connection.startReading()
        }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        client.write(Array("first".utf8))
        let more = Timer(on: loop, after: .milliseconds(100)) { client.write(Array(repeating: 0x61, count: 100_000)) }
        let check = Timer(on: loop, after: .milliseconds(400)) {
            pauser.readsWhilePaused = pauser.reads
            pauser.bytesWhilePaused = pauser.connection?.input.count ?? -1
            pauser.connection?.startReading()
        }
        let stop = Timer(on: loop, after: .milliseconds(900)) { loop.stop() }
        run(loop)
        XCTAssertEqual(pauser.readsWhilePaused, 1, "no read callback while paused")
        XCTAssertEqual(pauser.bytesWhilePaused, 0, "nothing read into the input while paused")
        XCTAssertEqual(pauser.total, 5 + 100_000, "everything arrives after resuming")
        withExtendedLifetime((listener, client, more, check, stop)) {}
    }

    /// A peer that resets while reading is paused (with data still unread) is reported as gone,
    /// without resuming the read.
    func testPeerLeavingWhilePausedIsReported() throws {
        let loop = try EventLoop()
        let pauser = Pauser()
        pauser.stopsLoopOnEnd = loop
        let (listener, address) = try listen(on: loop) { connection in
            pauser.connection = connection
            connection.delegate = pauser
            connection.reportsCloseWhilePaused = true
            connection.startReading()
        }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        client.write(Array("first".utf8))
        let more = Timer(on: loop, after: .milliseconds(100)) { client.write(Array("unread".utf8)) }
        let leave = Timer(on: loop, after: .milliseconds(300)) { client.reset() }
        run(loop)
        XCTAssertEqual(pauser.ended, .endOfStream)
        XCTAssertEqual(pauser.total, 5, "the bytes sent while paused were never read")
        withExtendedLifetime((listener, more, leave)) {}
    }

    /// No bytes within the read timeout end the connection with `.timeout`.
    func testReadTimeoutEndsAQuietConnection() throws {
        let loop = try EventLoop()
        let pauser = Pauser()
        pauser.pauses = false
        pauser.stopsLoopOnEnd = loop
        let started = ContinuousClock.now
        let (listener, address) = try listen(on: loop) { connection in
            pauser.connection = connection
            connection.delegate = pauser
            connection.setTimeouts(read: .milliseconds(150), write: nil)
            connection.startReading()
        }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        run(loop)
        XCTAssertEqual(pauser.ended, .timeout)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(150))
        withExtendedLifetime((listener, client)) {}
    }

    /// Bytes every 60 ms keep a 300 ms read timeout from firing (each read starts it over);
    /// a pause longer than the timeout stops it entirely; once reading is on again and the peer
    /// is quiet, it fires 300 ms after that, and not before.
    func testReadsPushTheReadTimeoutBackAndAPauseStopsIt() throws {
        let loop = try EventLoop()
        let pauser = Pauser()
        pauser.pauses = false
        pauser.stopsLoopOnEnd = loop
        var server: (any ByteStream)?
        let (listener, address) = try listen(on: loop) { connection in
            server = connection
            pauser.connection = connection
            connection.delegate = pauser
            connection.setTimeouts(read: .milliseconds(300), write: nil)
            connection.startReading()
        }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        let started = ContinuousClock.now
        var resumed: ContinuousClock.Instant?
        var sent = 0
        // A byte every 60 ms for 600 ms, then a 600 ms pause of the reader (no timeout while
        // paused), then reading again with nothing sent.
        let ticker = Timer(on: loop, after: .milliseconds(60), repeating: .milliseconds(60)) {
            if ContinuousClock.now - started < .milliseconds(600) {
                client.write([0x61])
                sent += 1
            }
        }
        let pause = Timer(on: loop, after: .milliseconds(650)) { server?.stopReading() }
        let resume = Timer(on: loop, after: .milliseconds(1250)) {
            resumed = .now
            server?.startReading()
        }
        run(loop)
        XCTAssertEqual(pauser.ended, .timeout)
        XCTAssertEqual(pauser.total, sent, "every byte sent before the pause was read")
        XCTAssertGreaterThanOrEqual(sent, 5, "bytes kept coming for longer than the timeout")
        let resumedAt = try XCTUnwrap(resumed, "the timeout did not fire while bytes came, nor while paused")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - resumedAt, .milliseconds(300), "restarted when reading resumed")
        withExtendedLifetime((listener, client, ticker, pause, resume)) {}
    }

    /// Two sockets readable in one iteration of the loop: the reply the first read queued is
    /// still queued while the second is read, and both leave after the last read (one wake-up of
    /// their readers for the batch); each arrives whole.
    func testRepliesQueuedByReadsOfOneIterationLeaveAfterItsLastRead() throws {
        let loop = try EventLoop()
        let echo = BatchEcho()
        let (listener, address) = try listen(on: loop) { connection in
            connection.delegate = echo
            echo.servers.append(connection)
            connection.startReading()
        }
        let replies = ReplyCollector(expected: 2, loop: loop)
        let first = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: replies))
        let second = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: replies))
        first.startReading()
        second.startReading()
        // Both requests leave in one flush pass of this timer's iteration, so both server
        // sockets are readable in the next iteration's one epoll_wait.
        let send = Timer(on: loop, after: .milliseconds(200)) {
            first.write(Array("one".utf8))
            second.write(Array("two".utf8))
        }
        run(loop)
        XCTAssertEqual(echo.reads, 2)
        XCTAssertEqual(echo.queuedElsewhereAtRead, [0, 3], "the first reply was still queued while the second socket was read")
        XCTAssertEqual(replies.received.sorted(), ["one", "two"])
        withExtendedLifetime((listener, first, second, send)) {}
    }

    // MARK: - writing

    /// 4 MiB written to a peer that does not read for a while: the writer hears that its output
    /// drained only once the peer took everything, and every byte arrives.
    func testWritesToASlowPeerDrainExactlyOnce() throws {
        let loop = try EventLoop()
        let sent = Self.payload(4 * 1024 * 1024)
        let writer = DrainCounter()
        let (listener, address) = try listen(on: loop) { connection in
            writer.connection = connection
            connection.delegate = writer
            connection.write(sent)
            writer.queuedAfterWrite = connection.output.count
        }
        let reader = SlowReader(loop: loop, expected: sent.count, watermark: 0)
        reader.startDelay = .milliseconds(300)
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: reader))
        reader.adopt(client)
        run(loop, seconds: 30)
        XCTAssertTrue(reader.received == sent, "every byte arrives in order")
        XCTAssertEqual(writer.drains, 1, "one drain report, when everything was handed over")
        XCTAssertEqual(writer.connection?.output.count, 0)
        withExtendedLifetime(listener) {}
    }

    /// A writer that reads its output's length each time it hears of a drain (as a body pump
    /// does before it queues more) and queues ten chunks, one per drain: every byte arrives,
    /// it hears of exactly one drain per chunk, and of none while it only reads the length.
    /// (Asking for the output schedules a flush; one that finds nothing queued reports no
    /// drain, or such a writer would be told again and again within one pass of the loop.)
    func testReadingTheOutputsLengthOnADrainReportsNoFurtherDrain() throws {
        let loop = try EventLoop()
        let chunk = Self.payload(100_000)
        let writer = LengthCheckingWriter(chunk: chunk, chunks: 10)
        let (listener, address) = try listen(on: loop) { connection in
            writer.connection = connection
            connection.delegate = writer
            writer.queueNext(on: connection)
        }
        let reader = SlowReader(loop: loop, expected: chunk.count * 10, watermark: 0)
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: reader))
        reader.adopt(client)
        run(loop, seconds: 10)
        // A while longer with nothing to send: no more drain reports.
        let quiet = Timer(on: loop, after: .milliseconds(200)) { loop.stop() }
        run(loop)
        XCTAssertTrue(reader.received == Array((0..<10).map { _ in chunk }.joined()), "every byte arrives in order")
        XCTAssertEqual(writer.drains, 10, "one drain report per chunk")
        XCTAssertGreaterThanOrEqual(writer.lengthReads, 10)
        withExtendedLifetime((listener, quiet)) {}
    }

    /// A client that reads nothing, with a small receive buffer: what the kernel takes of
    /// 8 MiB written to it stays near 256 KiB (`TCP_NOTSENT_LOWAT` on accepted sockets), so the
    /// rest waits in the proxy's output, where its limits see it. Without the option the send
    /// buffer autotunes to 4 MiB and the kernel holds megabytes per slow client.
    func testTheKernelQueuesLittleForAClientThatDoesNotRead() throws {
        let loop = try EventLoop()
        let sent = Self.payload(8 * 1024 * 1024)
        var accepted: (any ByteStream)?
        let (listener, address) = try listen(on: loop) { connection in
            accepted = connection
            connection.write(sent)
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var peer = sockaddr_in()
        peer.sin_family = sa_family_t(AF_INET)
        peer.sin_port = in_port_t(UInt16(address.port).bigEndian)
        peer.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(connected, 0)
        let stop = Timer(on: loop, after: .milliseconds(700)) { loop.stop() }
        run(loop)
        let taken = sent.count - (accepted?.output.count ?? 0)
        XCTAssertGreaterThan(taken, 0, "the kernel took some")
        XCTAssertLessThan(taken, 512 * 1024, "the kernel holds about the low watermark, not megabytes")
        withExtendedLifetime((listener, stop)) {}
    }

    // MARK: - connecting

    /// A refused connect is reported from the loop, never inside the call that started it.
    func testRefusedConnectIsReportedAsynchronously() throws {
        let loop = try EventLoop()
        let port = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { _ in }.address.port
        let watcher = Pauser()
        watcher.stopsLoopOnEnd = loop
        let connection = try XCTUnwrap(Connection.connect(to: SocketAddress(host: "127.0.0.1", port: port), tls: nil,
                                                          on: loop, delegate: watcher))
        XCTAssertNil(watcher.ended, "nothing is reported inside connect(to:)")
        XCTAssertFalse(connection.isConnected)
        run(loop)
        XCTAssertEqual(watcher.ended, .refused)
    }

    /// Bytes written before the connect completes go out once it does.
    func testBytesQueuedWhileConnectingAreSent() throws {
        let loop = try EventLoop()
        let sent = Self.payload(300_000)
        let reader = SlowReader(loop: loop, expected: sent.count, watermark: 0)
        let (listener, address) = try listen(on: loop) { reader.adopt($0) }
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: Quiet()))
        client.write(sent)
        run(loop)
        XCTAssertTrue(reader.received == sent)
        withExtendedLifetime((listener, client)) {}
    }
}

/// Ignores everything (a peer whose own events do not matter to the test).
private final class Quiet: ConnectionDelegate {
    func connectionDidRead(_ connection: any ByteStream) { connection.input.drain(connection.input.count) }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}

/// Takes nothing until `needs` bytes are buffered, then stops the loop.
private final class WholeMessageWaiter: ConnectionDelegate {
    let needs: Int
    let loop: EventLoop
    var connection: (any ByteStream)?
    var heldAtOldLimit = 0
    var complete = false
    init(needs: Int, loop: EventLoop) {
        self.needs = needs
        self.loop = loop
    }
    func connectionDidRead(_ connection: any ByteStream) {
        guard connection.input.count >= needs else { return }
        complete = true
        loop.stop()
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}

/// Pauses after its first read (unless `pauses` is false) and counts what it gets.
private final class Pauser: ConnectionDelegate {
    var connection: (any ByteStream)?
    var pauses = true
    var reads = 0
    var total = 0
    var readsWhilePaused = -1
    var bytesWhilePaused = -1
    var ended: ConnectionEnd?
    var stopsLoopOnEnd: EventLoop?
    func connectionDidRead(_ connection: any ByteStream) {
        reads += 1
        total += connection.input.count
        connection.input.drain(connection.input.count)
        if pauses && reads == 1 { connection.stopReading() }
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        ended = reason
        connection.close()
        stopsLoopOnEnd?.stop()
    }
}

/// Reads slowly: 4 KiB per millisecond behind a watermark, else 32 KiB (after `startDelay`), noting the largest input seen.
private final class SlowReader: ConnectionDelegate {
    let loop: EventLoop
    let expected: Int
    let watermark: Int
    var startDelay: Duration = .zero
    var received: [UInt8] = []
    var largestInput = 0
    var pauses = 0
    private var connection: (any ByteStream)?
    /// A repeating loop timer (typed loosely: Foundation's `Timer` shadows the name here).
    private var ticker: AnyObject?
    private var wasFull = false

    init(loop: EventLoop, expected: Int, watermark: Int) {
        self.loop = loop
        self.expected = expected
        self.watermark = watermark
    }

    func adopt(_ connection: any ByteStream) {
        self.connection = connection
        connection.delegate = self
        if watermark > 0 { connection.setReadHighWatermark(watermark) }
        // A delayed start reads nothing at all until then: the writer meets a full socket.
        if startDelay == .zero { connection.startReading() }
        ticker = Timer(on: loop, after: startDelay + .milliseconds(1), repeating: .milliseconds(1)) { [unowned self] in consume() }
    }

    func connectionDidRead(_ connection: any ByteStream) {
        largestInput = max(largestInput, connection.input.count)
        if watermark > 0 && connection.input.count >= watermark && !wasFull {
            wasFull = true
            pauses += 1
        }
    }

    private func consume() {
        guard let connection else { return }
        connection.startReading()
        let take = min(watermark > 0 ? 4096 : 32 * 1024, connection.input.count)
        received += connection.input.peekBytes(max: take)
        connection.input.drain(take)
        if connection.input.count < watermark { wasFull = false }
        if received.count >= expected {
            ticker = nil
            connection.close()
            loop.stop()
        }
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        // The writer finished; what is buffered is still consumed by the ticker.
    }
}

/// Counts output drain reports.
private final class DrainCounter: ConnectionDelegate {
    var connection: (any ByteStream)?
    var drains = 0
    var queuedAfterWrite = 0
    func connectionDidRead(_ connection: any ByteStream) {}
    func connectionDidDrain(_ connection: any ByteStream) { drains += 1 }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}

/// Queues `chunks` copies of `chunk`, the next one each time it hears its output drained, and
/// reads the output's length on every drain report (also after the last chunk). Stops reading
/// the length after far more reports than chunks, so a loop that keeps reporting ends the test
/// with a failure instead of spinning forever.
private final class LengthCheckingWriter: ConnectionDelegate {
    let chunk: [UInt8]
    let chunks: Int
    var connection: (any ByteStream)?
    var queued = 0
    var drains = 0
    var lengthReads = 0
    init(chunk: [UInt8], chunks: Int) {
        self.chunk = chunk
        self.chunks = chunks
    }
    func queueNext(on connection: any ByteStream) {
        connection.write(chunk)
        queued += 1
    }
    func connectionDidRead(_ connection: any ByteStream) {}
    func connectionDidDrain(_ connection: any ByteStream) {
        drains += 1
        guard drains < chunks + 100 else { return }
        lengthReads += 1
        if connection.output.count == 0 && queued < chunks { queueNext(on: connection) }
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}

/// Echoes what it reads, noting at each read how many bytes the other accepted connections
/// still have queued (written by the loop, not yet by the kernel).
private final class BatchEcho: ConnectionDelegate {
    var servers: [any ByteStream] = []
    var reads = 0
    var queuedElsewhereAtRead: [Int] = []
    func connectionDidRead(_ connection: any ByteStream) {
        reads += 1
        queuedElsewhereAtRead.append(servers.filter { $0 !== connection }.reduce(0) { $0 + $1.output.count })
        let bytes = connection.input.peekBytes(max: connection.input.count)
        connection.input.drain(bytes.count)
        connection.write(bytes)
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}

/// Collects each connection's reply as a String; stops the loop once `expected` arrived.
private final class ReplyCollector: ConnectionDelegate {
    let expected: Int
    let loop: EventLoop
    var received: [String] = []
    init(expected: Int, loop: EventLoop) {
        self.expected = expected
        self.loop = loop
    }
    func connectionDidRead(_ connection: any ByteStream) {
        let bytes = connection.input.peekBytes(max: connection.input.count)
        connection.input.drain(bytes.count)
        received.append(String(decoding: bytes, as: UTF8.self))
        if received.count == expected { loop.stop() }
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {}
}
