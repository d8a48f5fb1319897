import EventLoop
import XCTest

/// An echo delegate: whatever arrives is written back.
private final class Echo: ConnectionDelegate {
    func connectionDidRead(_ connection: any ByteStream) {
        connection.input.moveAll(to: connection.output)
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
}

/// A client delegate collecting what comes back and stopping the loop once `expected` bytes arrived.
private final class Collector: ConnectionDelegate {
    var received: [UInt8] = []
    var connected = false
    var ended: ConnectionEnd?
    let expected: Int
    let loop: EventLoop
    init(expected: Int, loop: EventLoop) { self.expected = expected; self.loop = loop }
    func connectionDidConnect(_ connection: any ByteStream) { connected = true }
    func connectionDidRead(_ connection: any ByteStream) {
        received += connection.input.peekBytes(max: connection.input.count)
        connection.input.drain(connection.input.count)
        if received.count >= expected { connection.close(); loop.stop() }
    }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        ended = reason
        connection.close()
        loop.stop()
    }
}

final class EventLoopTests: XCTestCase {
    func testEchoOverRealSocketsOnOneLoop() throws {
        let loop = try EventLoop()
        var accepted: [any ByteStream] = []
        let listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { connection in
            connection.delegate = Echo()
            connection.startReading()
            accepted.append(connection)
        }
        XCTAssertNotEqual(listener.address.port, 0, "port 0 resolves to the real port")
        let payload = Array((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let collector = Collector(expected: payload.count, loop: loop)
        let client = try XCTUnwrap(Connection.connect(host: "127.0.0.1", port: listener.address.port, on: loop, delegate: collector))
        client.write(payload)
        client.startReading()
        let guardTimer = Timer(on: loop, after: .seconds(10)) { loop.stop() }
        loop.run()
        guardTimer.cancel()
        XCTAssertTrue(collector.connected)
        XCTAssertEqual(collector.received, payload)
        withExtendedLifetime(accepted) {}
    }

    func testRefusedConnectIsReported() throws {
        let loop = try EventLoop()
        // Find a free port by binding and closing a listener.
        let port = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { _ in }.address.port
        let collector = Collector(expected: 1, loop: loop)
        _ = Connection.connect(host: "127.0.0.1", port: port, on: loop, delegate: collector)
        let guardTimer = Timer(on: loop, after: .seconds(10)) { loop.stop() }
        loop.run()
        guardTimer.cancel()
        XCTAssertEqual(collector.ended, .refused)
    }

    func testExecuteFromAnotherThreadRunsOnTheLoopThread() throws {
        let thread = try LoopThread { _ in }
        try thread.start()
        let done = DispatchSemaphore(value: 0)
        let loop = thread.loop
        DispatchQueue.global().async {
            loop.execute { done.signal() }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success)
        thread.stopAndJoin()
    }

    func testBuffersMoveWithoutLosingBytes() {
        let a = OwnedEventBuffer(), b = OwnedEventBuffer()
        a.buffer.append("hello world")
        XCTAssertEqual(a.buffer.move(to: b.buffer, max: 5), 5)
        XCTAssertEqual(b.buffer.peekBytes(max: 100), Array("hello".utf8))
        XCTAssertEqual(a.buffer.moveAll(to: b.buffer), 6)
        XCTAssertEqual(b.buffer.count, 11)
        XCTAssertTrue(a.buffer.isEmpty)
        b.buffer.drain(6)
        XCTAssertEqual(b.buffer.withContiguousPrefix(3) { Array($0) }, Array("wor".utf8))
    }

    /// The chunks of a buffer, read where they lie, are its bytes in order (nothing drained);
    /// an empty buffer has none.
    func testChunksAreTheBytesInOrder() {
        let a = OwnedEventBuffer()
        XCTAssertEqual(a.buffer.withChunks { $0.count }, 0)
        var expected: [UInt8] = []
        for index in 0..<40 {
            let piece = [UInt8](repeating: UInt8(index), count: 7_000 + index)
            a.buffer.append(piece)
            expected += piece
        }
        let chunks = a.buffer.withChunks { chunks in chunks.map { Array($0) } }
        XCTAssertGreaterThan(chunks.count, 1, "held in several chunks")
        XCTAssertEqual(chunks.flatMap { $0 }, expected)
        XCTAssertEqual(a.buffer.count, expected.count)
    }

    /// Bytes written in place land after what is buffered, and only as many as were written
    /// (not the space reserved); a reservation larger than a chain still comes in one piece.
    func testBytesWrittenInPlaceFollowWhatIsBuffered() {
        let a = OwnedEventBuffer()
        a.buffer.append("head:")
        a.buffer.write(reserving: 64) { space in
            XCTAssertEqual(space.count, 64)
            space.copyBytes(from: Array("abc".utf8))
            return 3
        }
        XCTAssertEqual(a.buffer.peekBytes(max: 100), Array("head:abc".utf8))
        let large = 300_000
        a.buffer.write(reserving: large) { space in
            for index in 0..<large { space[index] = UInt8(truncatingIfNeeded: index) }
            return large
        }
        XCTAssertEqual(a.buffer.count, 8 + large)
        a.buffer.drain(8)
        XCTAssertEqual(a.buffer.withContiguousPrefix(large) { Array($0) }, (0..<large).map { UInt8(truncatingIfNeeded: $0) })
        a.buffer.write(reserving: 10) { _ in 0 }
        XCTAssertEqual(a.buffer.count, large, "nothing written, nothing added")
    }

    func testSocketAddressParsing() throws {
        XCTAssertEqual(try SocketAddress(host: "::1", port: 8080).description, "[::1]:8080")
        XCTAssertEqual(try SocketAddress(host: "127.0.0.1", port: 0).description, "127.0.0.1:0")
        XCTAssertThrowsError(try SocketAddress(host: "localhost", port: 80))
        XCTAssertThrowsError(try SocketAddress(host: "127.0.0.1", port: 70000))
    }
}
