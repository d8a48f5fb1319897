import EventLoop
import XCTest
@testable import Proxy

/// Records what an upstream connection reports.
private final class Recorder: UpstreamConnectionOwner {
    func upstreamWanted(_ upstream: UpstreamConnection) {}
    let started = ContinuousClock.now
    var connectedAfter: Duration?
    var ended: UpstreamEnd?
    var endedAfter: Duration?
    func upstreamDidConnect(_ upstream: UpstreamConnection) { connectedAfter = .now - started }
    func upstreamDidRead(_ upstream: UpstreamConnection) {}
    func upstreamDidDrain(_ upstream: UpstreamConnection) {}
    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) {
        ended = reason
        endedAfter = .now - started
    }
}

/// A loopback listener that keeps what each accepted connection sends.
private final class Sink: ConnectionDelegate {
    private(set) var listener: Listener!
    private var accepted: [any ByteStream] = []
    var received: [UInt8] = []
    var connections: Int { accepted.count }

    init(loop: EventLoop) throws {
        listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { [unowned self] connection in
            connection.delegate = self
            connection.startReading()
            accepted.append(connection)
        }
    }

    func connectionDidRead(_ connection: any ByteStream) {
        received += connection.input.peekBytes(max: connection.input.count)
        connection.input.drain(connection.input.count)
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }

    func closeAll() {
        for connection in accepted { connection.close() }
        listener.close()
    }
}

/// RFC 8305 §5 connection racing in ``UpstreamConnection``, over real loopback sockets.
final class HappyEyeballsTests: XCTestCase {
    /// Runs `loop` until `done` holds (checked every 10 ms) or `limit` passes.
    private func run(_ loop: EventLoop, limit: Duration = .seconds(8), until done: @escaping () -> Bool) {
        let deadline = ContinuousClock.now + limit
        let poll = Timer(on: loop, after: .milliseconds(10), repeating: .milliseconds(10)) {
            if done() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        poll.cancel()
    }

    private func makeUpstream(_ loop: EventLoop, pool: UpstreamPool) -> UpstreamConnection {
        let target = UpstreamTarget(host: "backend.test", port: 80, tls: nil, poolKey: "http://backend.test:80",
                                    allowsLinkLocal: true)
        return UpstreamConnection(id: 0, target: target, pool: pool, loop: loop)
    }

    func testABlackholedFirstAddressDoesNotHoldUpTheNextOne() throws {
        let loop = try EventLoop()
        let blackhole = try Blackhole()
        let sink = try Sink(loop: loop)
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        let request = Array("GET / HTTP/1.1\r\nHost: backend.test\r\n\r\n".utf8)
        upstream.output.append(request)
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.2", port: blackhole.port), sink.listener.address],
                      timeout: .seconds(5))
        run(loop) { recorder.ended != nil || (recorder.connectedAfter != nil && sink.received.count >= request.count) }

        XCTAssertNil(recorder.ended, "the connection failed instead of using the second address")
        let connectedAfter = try XCTUnwrap(recorder.connectedAfter, "never connected")
        XCTAssertLessThan(connectedAfter, .seconds(1), "the blackholed first address delayed the second one")
        XCTAssertEqual(sink.received, request, "the staged request went to the winning connection, once")
        XCTAssertEqual(sink.connections, 1)
        upstream.close()
        sink.closeAll()
    }

    func testTheLosingAttemptIsClosed() throws {
        let loop = try EventLoop()
        let blackhole = try Blackhole()
        let sink = try Sink(loop: loop)
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        let before = Blackhole.pendingConnects(toPort: blackhole.port)
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.2", port: blackhole.port), sink.listener.address],
                      timeout: .seconds(5))
        var duringRace = 0
        run(loop) {
            duringRace = max(duringRace, Blackhole.pendingConnects(toPort: blackhole.port))
            return recorder.ended != nil || recorder.connectedAfter != nil
        }
        XCTAssertNotNil(recorder.connectedAfter)
        XCTAssertEqual(duringRace, before + 1, "the blackholed attempt was under way during the race")
        XCTAssertEqual(Blackhole.pendingConnects(toPort: blackhole.port), before, "the losing attempt was closed")
        upstream.close()
        sink.closeAll()
    }

    func testAFailedAttemptStartsTheNextOneAtOnce() throws {
        let loop = try EventLoop()
        let refusedPort = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { _ in }.address.port
        let sink = try Sink(loop: loop)
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        // An attempt delay far longer than the test's bound: only the refusal can start attempt two.
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.1", port: refusedPort), sink.listener.address],
                      timeout: .seconds(5), attemptDelay: .seconds(3))
        run(loop) { recorder.ended != nil || recorder.connectedAfter != nil }
        XCTAssertNil(recorder.ended)
        let connectedAfter = try XCTUnwrap(recorder.connectedAfter)
        XCTAssertLessThan(connectedAfter, .seconds(1))
        upstream.close()
        sink.closeAll()
    }

    func testWhenEveryAddressFailsTheLastFailureIsReported() throws {
        let loop = try EventLoop()
        let first = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { _ in }.address.port
        let second = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { _ in }.address.port
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.1", port: first), try SocketAddress(host: "127.0.0.1", port: second)],
                      timeout: .seconds(5))
        run(loop) { recorder.ended != nil || recorder.connectedAfter != nil }
        XCTAssertEqual(recorder.ended, .connection(.refused))
        XCTAssertLessThan(try XCTUnwrap(recorder.endedAfter), .seconds(1))
        XCTAssertTrue(upstream.isClosed)
    }

    func testAddressFamiliesAreInterleavedStartingWithTheFirstAnswer() throws {
        let v6a = try SocketAddress(host: "2001:db8::1", port: 443)
        let v6b = try SocketAddress(host: "2001:db8::2", port: 443)
        let v6c = try SocketAddress(host: "2001:db8::3", port: 443)
        let v4a = try SocketAddress(host: "192.0.2.1", port: 443)
        let v4b = try SocketAddress(host: "192.0.2.2", port: 443)
        let order = AddressRacer.interleaved([v6a, v6b, v6c, v4a, v4b]).map(\.description)
        XCTAssertEqual(order, [v6a, v4a, v6b, v4b, v6c].map(\.description))
        let v4First = AddressRacer.interleaved([v4a, v6a, v6b, v4b]).map(\.description)
        XCTAssertEqual(v4First, [v4a, v6a, v4b, v6b].map(\.description))
        XCTAssertEqual(AddressRacer.interleaved([v4b, v4a]).map(\.description), [v4b, v4a].map(\.description))
        XCTAssertTrue(AddressRacer.interleaved([]).isEmpty)
    }

    func testOnlyABlackholedAddressFailsWithConnectTimeoutAfterTheTimeout() throws {
        let loop = try EventLoop()
        let blackhole = try Blackhole()
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.2", port: blackhole.port)], timeout: .milliseconds(1500))
        run(loop) { recorder.ended != nil || recorder.connectedAfter != nil }

        XCTAssertNil(recorder.connectedAfter, "connected to the blackhole?")
        XCTAssertEqual(recorder.ended, .connectTimeout)
        let endedAfter = try XCTUnwrap(recorder.endedAfter)
        XCTAssertGreaterThanOrEqual(endedAfter, .milliseconds(1450))
        XCTAssertLessThan(endedAfter, .seconds(3))
    }
}
