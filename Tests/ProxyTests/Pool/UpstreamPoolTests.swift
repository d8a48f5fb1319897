import EventLoop
import TestSupport
import XCTest
@testable import Proxy

/// Stands in for a session: owns an upstream connection's events and waits in the queue.
private final class FakeSession: UpstreamConnectionOwner, UpstreamWaiter {
    func upstreamWanted(_ upstream: UpstreamConnection) {}
    var connected = false
    var ended: UpstreamEnd?
    var provided: UpstreamConnection?
    var poolTicket = -1
    func upstreamDidConnect(_ upstream: UpstreamConnection) { connected = true }
    func upstreamDidRead(_ upstream: UpstreamConnection) {}
    func upstreamDidDrain(_ upstream: UpstreamConnection) {}
    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) { ended = reason }
    func pool(didProvide upstream: UpstreamConnection) { provided = upstream }
}

/// ``UpstreamPool`` as a driver, over in-memory backend streams (its `connector`): what a
/// release does with a quiet connection, one with bytes beyond the response, or one the backend
/// closed; the queue at the limit, and a freed slot going to the oldest waiter.
final class UpstreamPoolTests: XCTestCase {
    private let target = UpstreamTarget(host: "backend.test", port: 8080, tls: nil, poolKey: "http://backend.test:8080",
                                        allowsLinkLocal: false)

    /// A pool whose connections are in-memory streams, and the streams it opened, in order.
    private final class Pool {
        let loop: EventLoop
        let pool: UpstreamPool
        private(set) var streams: [MemoryStream] = []

        init(limit: Int, maxWaitersPerKey: Int = 1024) throws {
            loop = try EventLoop()
            pool = UpstreamPool(loop: loop, limit: limit, connectTimeout: .seconds(5), idleTimeout: .seconds(30),
                                maxWaitersPerKey: maxWaitersPerKey)
            pool.connector = { [unowned self] _ in
                let stream = MemoryStream(loop: loop, connected: false)
                streams.append(stream)
                return stream
            }
        }

        deinit { pool.closeAll() }
    }

    /// Acquires a new connection for `session` and completes its connect.
    private func connect(_ pool: Pool, _ session: FakeSession, file: StaticString = #filePath, line: UInt = #line) throws
        -> (upstream: UpstreamConnection, stream: MemoryStream) {
        guard case .ready(let upstream) = pool.pool.acquire(target, waiter: session, checkStale: false) else {
            throw TestClientError.malformed("no connection")
        }
        upstream.owner = session
        let stream = try XCTUnwrap(pool.streams.last, file: file, line: line)
        stream.connect()
        XCTAssertTrue(session.connected, file: file, line: line)
        return (upstream, stream)
    }

    func testAQuietConnectionIsPooledAndReused() throws {
        let pool = try Pool(limit: 2)
        let session = FakeSession()
        let (upstream, _) = try connect(pool, session)
        XCTAssertEqual(pool.pool.gauges()[UpstreamGaugeKey(upstream: "backend.test:8080", state: "active")], 1)
        XCTAssertEqual(pool.pool.release(upstream), .pooled)
        XCTAssertTrue(upstream.isIdle)
        guard case .ready(let again) = pool.pool.acquire(target, waiter: session, checkStale: true) else {
            return XCTFail("no connection")
        }
        XCTAssertTrue(again === upstream, "the idle connection was reused after a clean peek")
        XCTAssertEqual(pool.streams.count, 1)
        upstream.close()
        XCTAssertTrue(pool.pool.gauges().values.allSatisfy { $0 == 0 })
    }

    /// While idle, a byte from the backend retires the connection, but a read callback with
    /// nothing to read (a deferred one whose bytes the exchange took first) does not.
    func testAnIdleConnectionIsRetiredByABytesNotByAnEmptyReadCallback() throws {
        let pool = try Pool(limit: 2)
        let session = FakeSession()
        let (upstream, stream) = try connect(pool, session)
        XCTAssertEqual(pool.pool.release(upstream), .pooled)
        stream.repeatReadCallback()
        XCTAssertFalse(upstream.isClosed, "nothing arrived")
        XCTAssertEqual(pool.pool.gauges()[UpstreamGaugeKey(upstream: "backend.test:8080", state: "idle")], 1)
        stream.receive("x")
        XCTAssertTrue(upstream.isClosed, "a byte while idle: the backend is closing it or misbehaving")
        XCTAssertEqual(stream.ending, .closed)
    }

    func testBytesBeyondTheResponseDiscardTheConnection() throws {
        let pool = try Pool(limit: 2)
        let (upstream, stream) = try connect(pool, FakeSession())
        stream.receive("HTTP/1.1 200 OK\r\n\r\n")
        XCTAssertEqual(pool.pool.release(upstream), .discardedUnexpectedBytes)
        XCTAssertTrue(upstream.isClosed)
        XCTAssertEqual(stream.ending, .closed)
    }

    /// The backend's close reported to the session before the release, or seen but not yet
    /// reported.
    func testABackendThatClosedAfterTheResponseIsNotPooled() throws {
        for reported in [true, false] {
            let pool = try Pool(limit: 2)
            let session = FakeSession()
            let (upstream, stream) = try connect(pool, session)
            if reported {
                stream.end(.endOfStream)
                XCTAssertEqual(session.ended, .connection(.endOfStream))
            } else {
                stream.endUnreported()
            }
            XCTAssertEqual(pool.pool.release(upstream), .closed, "reported: \(reported)")
            XCTAssertTrue(upstream.isClosed)
            XCTAssertEqual(stream.ending, .closed)
            XCTAssertTrue(pool.pool.gauges().values.allSatisfy { $0 == 0 })
        }
    }

    /// A backend seen closing right after a response marks its key: a request that cannot be
    /// retried then gets a fresh connection rather than race the next close. An HTTP/2 target's
    /// "connections" are stream pipes, each request a fresh stream on a live connection: one
    /// pipe that ended early (a gRPC call answered before its END_STREAM went out) must not make
    /// every later POST open a pipe and close an idle one (what a gRPC call paid 14k instructions
    /// for, on every call, for 300 s).
    func testAnEagerCloseMarkMakesHTTP1RequestsAvoidReuseButNotHTTP2StreamPipes() throws {
        for http in [UpstreamHTTP.http1, .h2] {
            var target = self.target
            target.http = http
            let pool = try Pool(limit: 3)
            let session = FakeSession()
            func connect() throws -> (UpstreamConnection, MemoryStream) {
                guard case .ready(let upstream) = pool.pool.acquire(target, waiter: session, checkStale: false) else {
                    throw TestClientError.malformed("no connection")
                }
                upstream.owner = session
                let stream = try XCTUnwrap(pool.streams.last)
                stream.connect()
                return (upstream, stream)
            }
            let (first, firstStream) = try connect()
            firstStream.endUnreported()
            XCTAssertEqual(pool.pool.release(first), .closed, "\(http)")
            let (second, _) = try connect()
            XCTAssertEqual(pool.pool.release(second), .pooled, "\(http)")
            guard case .ready(let next) = pool.pool.acquire(target, waiter: session, checkStale: true) else {
                return XCTFail("no connection for \(http)")
            }
            if http == .h2 {
                XCTAssertTrue(next === second, "an HTTP/2 target's idle pipe is reused whatever the mark")
                XCTAssertEqual(pool.streams.count, 2)
            } else {
                XCTAssertFalse(next === second, "a marked HTTP/1.1 key gets a fresh connection for a POST")
                XCTAssertEqual(pool.streams.count, 3)
            }
            next.close()
            second.close()
        }
    }

    func testAtTheLimitRequestsQueueThenOverflowAndAReleaseHandsOver() throws {
        let pool = try Pool(limit: 1, maxWaitersPerKey: 1)
        let first = FakeSession(), second = FakeSession(), third = FakeSession()
        let (upstream, _) = try connect(pool, first)
        guard case .queued = pool.pool.acquire(target, waiter: second, checkStale: false) else { return XCTFail("not queued") }
        guard case .overloaded = pool.pool.acquire(target, waiter: third, checkStale: false) else { return XCTFail("not overloaded") }
        XCTAssertEqual(pool.pool.release(upstream), .handedOver)
        XCTAssertTrue(second.provided === upstream)
        XCTAssertNil(third.provided)
        // A cancelled waiter is not served: the next release pools.
        guard case .queued = pool.pool.acquire(target, waiter: third, checkStale: false) else { return XCTFail("not queued") }
        pool.pool.cancel(third, key: target.poolKey)
        XCTAssertEqual(pool.pool.release(upstream), .pooled)
        XCTAssertNil(third.provided)
        XCTAssertEqual(pool.streams.count, 1)
    }

    /// A waiter that gave up, or was served, cancels nothing when it cancels again: not the
    /// waiter queued after it, even one queued where it was (after the pool forgot its queue).
    func testACancelWithAnOldTicketLeavesTheWaiterNowInItsPlace() throws {
        let pool = try Pool(limit: 1)
        let first = FakeSession(), gone = FakeSession(), waiting = FakeSession()
        let (upstream, _) = try connect(pool, first)
        guard case .queued = pool.pool.acquire(target, waiter: gone, checkStale: false) else { return XCTFail("not queued") }
        pool.pool.cancel(gone, key: target.poolKey)
        guard case .queued = pool.pool.acquire(target, waiter: waiting, checkStale: false) else { return XCTFail("not queued") }
        pool.pool.cancel(gone, key: target.poolKey)
        XCTAssertEqual(pool.pool.release(upstream), .handedOver)
        XCTAssertTrue(waiting.provided === upstream)
        XCTAssertNil(gone.provided)

        // The queue forgotten (`closeAll`, which leaves a lent connection lent) and begun
        // again: the next waiter is queued under the very ID the old one's ticket names.
        let again = try Pool(limit: 1)
        let (busy, _) = try connect(again, FakeSession())
        let old = FakeSession(), next = FakeSession()
        guard case .queued = again.pool.acquire(target, waiter: old, checkStale: false) else { return XCTFail("not queued") }
        again.pool.closeAll()
        guard case .queued = again.pool.acquire(target, waiter: next, checkStale: false) else { return XCTFail("not queued") }
        XCTAssertEqual(old.poolTicket, next.poolTicket, "the same ID")
        again.pool.cancel(old, key: target.poolKey)
        XCTAssertEqual(again.pool.release(busy), .handedOver)
        XCTAssertTrue(next.provided === busy)
        XCTAssertNil(old.provided)
    }

    /// A release that hands a connection straight to a queued request peeks (a syscall) only
    /// for a request that could not be retried: a GET takes it as it would an idle one; a POST
    /// is not given one whose backend has closed, and gets a new connection instead.
    func testAHandOverPeeksOnlyForARequestThatCannotBeRetried() throws {
        let pool = try Pool(limit: 1)
        let first = FakeSession(), get = FakeSession(), post = FakeSession()
        let (upstream, stream) = try connect(pool, first)
        guard case .queued = pool.pool.acquire(target, waiter: get, checkStale: false) else { return XCTFail("not queued") }
        XCTAssertEqual(pool.pool.release(upstream), .handedOver)
        XCTAssertTrue(get.provided === upstream)
        XCTAssertEqual(stream.peeks, 0, "no peek for a request that can be retried")

        upstream.owner = get
        guard case .queued = pool.pool.acquire(target, waiter: post, checkStale: true) else { return XCTFail("not queued") }
        stream.arriveUnseen(.closed)
        XCTAssertEqual(pool.pool.release(upstream), .closed)
        XCTAssertEqual(stream.peeks, 1, "the POST's connection was peeked at")
        try assertNewConnection(for: post, not: upstream, pool)
    }

    /// After a response without a body by rule (to a HEAD, a 204, a 304) a hand-over peeks even
    /// for a GET: a backend that sent a body anyway has its bytes in the kernel, and they must not
    /// be read as the GET's response. The GET gets a new connection.
    func testAHandOverAfterABodilessResponsePeeksAndBytesBeyondItDiscardTheConnection() throws {
        let pool = try Pool(limit: 1)
        let first = FakeSession(), get = FakeSession()
        let (upstream, stream) = try connect(pool, first)
        guard case .queued = pool.pool.acquire(target, waiter: get, checkStale: false) else { return XCTFail("not queued") }
        stream.arriveUnseen(.data)
        XCTAssertEqual(pool.pool.release(upstream, bodilessResponse: true), .discardedUnexpectedBytes)
        XCTAssertEqual(stream.peeks, 1)
        try assertNewConnection(for: get, not: upstream, pool)
    }

    /// `upstream` was closed instead of handed over, and `waiter` got a second, new connection.
    private func assertNewConnection(for waiter: FakeSession, not upstream: UpstreamConnection, _ pool: Pool,
                                     file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(upstream.isClosed, file: file, line: line)
        let fresh = try XCTUnwrap(waiter.provided, "the waiter gets a new connection", file: file, line: line)
        XCTAssertFalse(fresh === upstream, file: file, line: line)
        XCTAssertEqual(pool.streams.count, 2, file: file, line: line)
    }

    func testClosingALeasedConnectionOpensOneForTheOldestWaiter() throws {
        let pool = try Pool(limit: 1)
        let first = FakeSession(), second = FakeSession()
        let (upstream, _) = try connect(pool, first)
        guard case .queued = pool.pool.acquire(target, waiter: second, checkStale: false) else { return XCTFail("not queued") }
        upstream.close()
        let fresh = try XCTUnwrap(second.provided)
        XCTAssertFalse(fresh === upstream)
        XCTAssertEqual(pool.streams.count, 2, "a new connection was opened for the waiter")
        fresh.owner = second
        pool.streams[1].connect()
        XCTAssertTrue(second.connected)
    }
}
