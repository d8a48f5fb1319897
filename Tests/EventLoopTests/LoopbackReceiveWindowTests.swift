import EventLoop
import Foundation
import TestSupport
import XCTest

/// The receive window of a connection to a loopback backend (``ReceiveWindow`` applied by the
/// socket path) on a real socket: it starts small and really widens as the consumer takes the
/// response, so a consumer that keeps up gets large reads.
final class LoopbackReceiveWindowTests: XCTestCase {
    /// Takes everything it reads at once, and tells the stream how much it took.
    private final class Taker: ConnectionDelegate {
        var taken = 0
        var reads = 0
        func connectionDidRead(_ connection: any ByteStream) {
            reads += 1
            taken += connection.input.count
            connection.input.drain(connection.input.count)
            connection.widenReceiveWindow(taken: taken)
        }
        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }
    }

    /// 8 MiB from a backend that writes it all at once: with the window stuck where its first
    /// 16 KiB buffer clamped it (a larger receive buffer alone does not widen an established
    /// connection's window) this took 138 reads; a window that widens takes about 36.
    func testAWindowThatWidensGivesAConsumerThatKeepsUpLargeReads() throws {
        let loop = try EventLoop()
        let size = 8 << 20
        var served: [any ByteStream] = []
        let listener = try Listener(address: loopback, on: loop) { stream in
            served.append(stream)
            stream.write([UInt8](repeating: 0x61, count: size))
        }
        let taker = Taker()
        let address = try SocketAddress(host: "127.0.0.1", port: listener.address.port)
        let client = try XCTUnwrap(Connection.connect(to: address, tls: nil, on: loop, delegate: taker))
        client.startReading()
        let deadline = ContinuousClock.now + .seconds(20)
        let check = LoopTimer(on: loop, after: .zero, repeating: .milliseconds(2)) {
            if taker.taken >= size || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        check.cancel()
        XCTAssertEqual(taker.taken, size)
        XCTAssertLessThan(taker.reads, 80, "reads stay small when the window does not widen")
        client.close()
        served.forEach { $0.close() }
    }
}
