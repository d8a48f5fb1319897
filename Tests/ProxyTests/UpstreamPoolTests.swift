import EventLoop
import TestSupport
import XCTest
@testable import Proxy

/// A backend on 127.0.0.1 that does `onAccept` to each connection and keeps it open.
private final class ScriptedBackend: ConnectionDelegate {
    private(set) var listener: Listener!
    private var accepted: [any ByteStream] = []
    var connections: Int { accepted.count }

    init(loop: EventLoop, onAccept: @escaping (any ByteStream) -> Void) throws {
        listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { [unowned self] connection in
            connection.delegate = self
            accepted.append(connection)
            onAccept(connection)
        }
    }

    func connectionDidRead(_ connection: any ByteStream) { connection.input.drain(connection.input.count) }
    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }

    func closeAll() {
        for connection in accepted { connection.close() }
        listener.close()
    }
}

/// Stands in for a session: owns an upstream connection's events and waits in the queue.
private final class FakeSession: UpstreamConnectionOwner, UpstreamWaiter {
    func upstreamWanted(_ upstream: UpstreamConnection) {}
    var connected = false
    var ended: UpstreamEnd?
    var provided: UpstreamConnection?
    func upstreamDidConnect(_ upstream: UpstreamConnection) { connected = true }
    func upstreamDidRead(_ upstream: UpstreamConnection) {}
    func upstreamDidDrain(_ upstream: UpstreamConnection) {}
    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) { ended = reason }
    func pool(didProvide upstream: UpstreamConnection) { provided = upstream }
}

/// ``UpstreamPool`` as a driver, over real loopback sockets.
final class UpstreamPoolTests: XCTestCase {
    /// Runs `loop` until `done` holds (checked every 10 ms) or 5 s pass.
    private func run(_ loop: EventLoop, until done: @escaping () -> Bool) {
        let deadline = ContinuousClock.now + .seconds(5)
        let poll = Timer(on: loop, after: .milliseconds(10), repeating: .milliseconds(10)) {
            if done() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        poll.cancel()
    }

    private func target(_ backend: ScriptedBackend) -> UpstreamTarget {
        let port = backend.listener.address.port
        return UpstreamTarget(host: "127.0.0.1", port: port, tls: nil, poolKey: "http://127.0.0.1:\(port)", allowsLinkLocal: false)
    }

    /// Acquires a new connection for `session` and runs the loop until it is connected.
    private func connect(_ pool: UpstreamPool, _ target: UpstreamTarget, _ session: FakeSession, loop: EventLoop) throws -> UpstreamConnection {
        guard case .ready(let upstream) = pool.acquire(target, waiter: session, checkStale: false) else {
            throw TestClientError.malformed("no connection")
        }
        upstream.owner = session
        run(loop) { session.connected || session.ended != nil }
        XCTAssertTrue(session.connected)
        return upstream
    }

    func testAQuietConnectionIsPooledAndReused() throws {
        let loop = try EventLoop()
        let backend = try ScriptedBackend(loop: loop) { _ in }
        let pool = UpstreamPool(loop: loop, limit: 2, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let session = FakeSession()
        let upstream = try connect(pool, target(backend), session, loop: loop)
        XCTAssertEqual(pool.gauges()[UpstreamGaugeKey(upstream: "127.0.0.1:\(backend.listener.address.port)", state: "active")], 1)
        XCTAssertEqual(pool.release(upstream), .pooled)
        XCTAssertTrue(upstream.isIdle)
        guard case .ready(let again) = pool.acquire(target(backend), waiter: session, checkStale: true) else {
            return XCTFail("no connection")
        }
        XCTAssertTrue(again === upstream, "the idle connection was reused after a clean peek")
        upstream.close()
        XCTAssertTrue(pool.gauges().values.allSatisfy { $0 == 0 })
        backend.closeAll()
    }

    func testBytesBeyondTheResponseDiscardTheConnection() throws {
        let loop = try EventLoop()
        let backend = try ScriptedBackend(loop: loop) { $0.write(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) }
        let pool = UpstreamPool(loop: loop, limit: 2, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let session = FakeSession()
        let upstream = try connect(pool, target(backend), session, loop: loop)
        // Let the bytes reach the socket (read into the input, or still in the kernel).
        let settle = ContinuousClock.now + .milliseconds(100)
        run(loop) { ContinuousClock.now >= settle }
        XCTAssertEqual(pool.release(upstream), .discardedUnexpectedBytes)
        XCTAssertTrue(upstream.isClosed)
        backend.closeAll()
    }

    func testABackendThatClosedAfterTheResponseIsNotPooled() throws {
        let loop = try EventLoop()
        let backend = try ScriptedBackend(loop: loop) { $0.closeAfterFlush(linger: .zero) }
        let pool = UpstreamPool(loop: loop, limit: 2, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let session = FakeSession()
        let upstream = try connect(pool, target(backend), session, loop: loop)
        let settle = ContinuousClock.now + .milliseconds(100)
        run(loop) { ContinuousClock.now >= settle }
        XCTAssertEqual(pool.release(upstream), .closed)
        XCTAssertTrue(upstream.isClosed)
        backend.closeAll()
    }

    func testAtTheLimitRequestsQueueThenOverflowAndAReleaseHandsOver() throws {
        let loop = try EventLoop()
        let backend = try ScriptedBackend(loop: loop) { _ in }
        let pool = UpstreamPool(loop: loop, limit: 1, connectTimeout: .seconds(5), idleTimeout: .seconds(30), maxWaitersPerKey: 1)
        let first = FakeSession(), second = FakeSession(), third = FakeSession()
        let upstream = try connect(pool, target(backend), first, loop: loop)
        guard case .queued = pool.acquire(target(backend), waiter: second, checkStale: false) else { return XCTFail("not queued") }
        guard case .overloaded = pool.acquire(target(backend), waiter: third, checkStale: false) else { return XCTFail("not overloaded") }
        XCTAssertEqual(pool.release(upstream), .handedOver)
        XCTAssertTrue(second.provided === upstream)
        XCTAssertNil(third.provided)
        // A cancelled waiter is not served: the next release pools.
        guard case .queued = pool.acquire(target(backend), waiter: third, checkStale: false) else { return XCTFail("not queued") }
        pool.cancel(third, key: target(backend).poolKey)
        XCTAssertEqual(pool.release(upstream), .pooled)
        XCTAssertNil(third.provided)
        upstream.close()
        backend.closeAll()
    }

    func testClosingALeasedConnectionOpensOneForTheOldestWaiter() throws {
        let loop = try EventLoop()
        let backend = try ScriptedBackend(loop: loop) { _ in }
        let pool = UpstreamPool(loop: loop, limit: 1, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let first = FakeSession(), second = FakeSession()
        let upstream = try connect(pool, target(backend), first, loop: loop)
        guard case .queued = pool.acquire(target(backend), waiter: second, checkStale: false) else { return XCTFail("not queued") }
        upstream.close()
        let fresh = try XCTUnwrap(second.provided)
        XCTAssertFalse(fresh === upstream)
        fresh.owner = second
        run(loop) { second.connected || second.ended != nil }
        XCTAssertTrue(second.connected)
        fresh.close()
        backend.closeAll()
    }
}
