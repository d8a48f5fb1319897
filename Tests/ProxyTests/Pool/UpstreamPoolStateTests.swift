import XCTest
@testable import Proxy

/// Every transition of ``UpstreamPoolState``, without sockets or clocks.
final class UpstreamPoolStateTests: XCTestCase {
    typealias State = UpstreamPoolState

    private let start = PoolInstant.now
    /// The instant `ms` milliseconds into the test.
    private func at(_ ms: Int) -> PoolInstant { start + .milliseconds(ms) }

    /// A state with one leased connection per waiter in `waiters`, all for `key`.
    private func leased(_ state: inout State, key: String = "a", waiters: [Int]) -> [State.ConnectionID] {
        waiters.map { waiter in
            guard case .create(let id, nil) = state.request(key: key, waiter: waiter, checkStale: false, now: at(0)) else {
                XCTFail("expected a new connection for waiter \(waiter)")
                return -1
            }
            return id
        }
    }

    /// The ID of the one connection `state` knows that is not in `used` (the one an event just
    /// created); -1 and a failure when there is not exactly one. `used` lists closed IDs too, so
    /// a reused ID fails here.
    private func newID(_ state: State, besides used: [State.ConnectionID],
                       file: StaticString = #filePath, line: UInt = #line) -> State.ConnectionID {
        let new = state.connections.keys.filter { !used.contains($0) }
        guard new.count == 1 else {
            XCTFail("expected one new connection, found \(new)", file: file, line: line)
            return -1
        }
        return new[0]
    }

    // MARK: - request

    func testRequestOnAnEmptyKeyCreatesAConnectionThatIsConnectingUntilConnected() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        XCTAssertEqual(state.request(key: "a", waiter: 1, checkStale: false, now: at(0)), .create(0, replacing: nil))
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 1, waiting: 0))
        state.connected(0)
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 0, waiting: 0))
        XCTAssertEqual(state.connections[0]?.phase, .leased)
        state.connected(0)
        XCTAssertEqual(state.counts(for: "a").connecting, 0, "a second connected event changes nothing")
    }

    func testRequestReusesTheMostRecentlyUsedIdleConnection() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        XCTAssertEqual(state.released(ids[0], now: at(10)), .pool(ids[0], idleTimeout: .seconds(30)))
        XCTAssertEqual(state.released(ids[1], now: at(20)), .pool(ids[1], idleTimeout: .seconds(30)))
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: false, now: at(30)), .lease(ids[1]))
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: false, now: at(30)), .lease(ids[0]))
        let fifth = state.request(key: "a", waiter: 5, checkStale: false, now: at(30))
        XCTAssertEqual(fifth, .create(newID(state, besides: ids), replacing: nil))
    }

    func testANonRetryableRequestPeeksBeforeLeasing() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.released(id, now: at(0))
        XCTAssertEqual(state.request(key: "a", waiter: 2, checkStale: true, now: at(5000)), .peek(id))
        XCTAssertEqual(state.counts(for: "a").idle, 0, "a connection being peeked at is not idle")
        XCTAssertEqual(state.peekCompleted(id, stale: false, now: at(5000)), .lease(id))
        XCTAssertEqual(state.connections[id]?.phase, .leased)
    }

    func testAStalePeekDiscardsTheConnectionAndTriesTheNextIdleOne() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        _ = state.released(ids[1], now: at(0))
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: true, now: at(5000)), .peek(ids[1]))
        XCTAssertEqual(state.peekCompleted(ids[1], stale: true, now: at(5000)), .discard(ids[1], then: .peek(ids[0])))
        XCTAssertNil(state.connections[ids[1]])
        let second = state.peekCompleted(ids[0], stale: true, now: at(5000))
        XCTAssertEqual(second, .discard(ids[0], then: .create(newID(state, besides: ids), replacing: nil)))
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 1, waiting: 0))
        XCTAssertTrue(state.eagerCloses.marks.isEmpty, "closed long after the last response: not eager")
    }

    func testAStalePeekSoonAfterTheResponseMarksTheKeyAndSkipsOtherIdleConnections() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        _ = state.released(ids[1], now: at(0))
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: true, now: at(200)), .peek(ids[1]))
        let peeked = state.peekCompleted(ids[1], stale: true, now: at(200))
        XCTAssertEqual(peeked, .discard(ids[1], then: .create(newID(state, besides: ids), replacing: nil)))
        XCTAssertNotNil(state.eagerCloses.marks["a"])
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: false, now: at(300)), .lease(ids[0]),
                       "retryable requests still reuse")
    }

    func testAtTheLimitRequestsQueueAndAreServedFirstInFirstOutByReleases() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        XCTAssertEqual(state.request(key: "a", waiter: 2, checkStale: false, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: true, now: at(0)), .enqueued)
        XCTAssertEqual(state.counts(for: "a").waiting, 2)
        XCTAssertEqual(state.request(key: "b", waiter: 4, checkStale: false, now: at(0)), .create(1, replacing: nil),
                       "the limit is per key")
        XCTAssertEqual(state.released(id, now: at(10)), .handOver(id, to: 2))
        XCTAssertEqual(state.released(id, now: at(20)), .handOver(id, to: 3))
        XCTAssertEqual(state.released(id, now: at(30)), .pool(id, idleTimeout: .seconds(30)))
    }

    func testRequestsThatYieldQueueBehindThoseThatDoNotAndFirstInFirstOutAmongThemselves() {
        // Many streams of one HTTP/2 app connection yield: a request of another client queued
        // after them is served first.
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        XCTAssertEqual(state.request(key: "a", waiter: 2, checkStale: false, yields: true, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: false, yields: true, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: false, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 5, checkStale: false, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 6, checkStale: false, yields: true, now: at(0)), .enqueued)
        let order = (1...5).map { step -> State.WaiterID? in
            if case .handOver(_, let to) = state.released(id, now: at(10 * step)) { return to }
            return nil
        }
        XCTAssertEqual(order, [4, 5, 2, 3, 6])
    }

    func testRequestsThatYieldHoldAtMostTheirShareAndTheRestStaysForOthers() {
        // limit 8: requests that yield (streams of a busy HTTP/2 app) hold at most 6.
        var state = State(limit: 8, idleTimeout: .seconds(30))
        XCTAssertEqual(state.yieldingShare, 6)
        var yielding: [State.ConnectionID] = []
        for waiter in 1...6 {
            guard case .create(let id, nil) = state.request(key: "a", waiter: waiter, checkStale: false, yields: true, now: at(0)) else {
                return XCTFail("a request that yields gets a connection within its share")
            }
            yielding.append(id)
        }
        XCTAssertEqual(state.request(key: "a", waiter: 7, checkStale: false, yields: true, now: at(0)), .enqueued,
                       "past its share, one that yields waits though the limit has room")
        // Another client's request still gets a connection at once.
        let other = leased(&state, waiters: [8])[0]
        // Given back, that one goes idle, not to the waiter over its share...
        XCTAssertEqual(state.released(other, now: at(10)), .pool(other, idleTimeout: .seconds(30)))
        XCTAssertEqual(state.counts(for: "a").waiting, 1)
        // ...and the next other request takes it.
        XCTAssertEqual(state.request(key: "a", waiter: 9, checkStale: false, now: at(20)), .lease(other))
        // A connection given back by one that yields goes to the waiter that yields.
        XCTAssertEqual(state.released(yielding[0], now: at(30)), .handOver(yielding[0], to: 7))
        XCTAssertEqual(state.request(key: "a", waiter: 10, checkStale: false, yields: true, now: at(40)), .enqueued)
        // One that closes frees a share and a slot: the waiter gets a new connection.
        guard case .create(_, for: 10) = state.connectionClosed(yielding[1], now: at(50)) else {
            return XCTFail("the waiter that yields is served when a connection of its share closes")
        }
    }

    func testOnlyAWaiterThatDoesNotYieldTakesBackAStalledConnection() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        XCTAssertEqual(state.yieldingShare, 3)
        let other = leased(&state, waiters: [1])[0]
        let yielding = (2...4).map { waiter -> State.ConnectionID in
            guard case .create(let id, nil) = state.request(key: "a", waiter: waiter, checkStale: false, yields: true, now: at(0)) else {
                XCTFail("within the share")
                return -1
            }
            return id
        }
        for id in [other] + yielding { state.connected(id) }
        XCTAssertNil(state.leaseStalled(other, now: at(1)))
        XCTAssertEqual(state.request(key: "a", waiter: 5, checkStale: false, yields: true, now: at(2)), .enqueued)
        XCTAssertNil(state.reclaimForQueue("a"), "a waiter that yields cuts no stalled response")
        XCTAssertNil(state.leaseStalled(yielding[1], now: at(3)), "nor one that stalls later")
        // Another client's request does: the connection that stalled first.
        XCTAssertEqual(state.request(key: "a", waiter: 6, checkStale: false, now: at(4)), .enqueued)
        XCTAssertEqual(state.reclaimForQueue("a"), other)
        XCTAssertEqual(state.released(other, now: at(5)), .handOver(other, to: 6))
    }

    func testAFullQueueRejects() {
        var state = State(limit: 1, idleTimeout: .seconds(30), maxWaitersPerKey: 2)
        _ = leased(&state, waiters: [1])
        XCTAssertEqual(state.request(key: "a", waiter: 2, checkStale: false, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: false, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: false, now: at(0)), .rejected)
        XCTAssertEqual(state.counts(for: "a").waiting, 2)
    }

    // MARK: - closing and cancelling

    func testAClosedConnectionGivesItsSlotToTheOldestWaiter() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.request(key: "a", waiter: 2, checkStale: false, now: at(0))
        _ = state.request(key: "a", waiter: 3, checkStale: false, now: at(0))
        let first = state.connectionClosed(id, now: at(5))
        let second = newID(state, besides: [id])
        XCTAssertEqual(first, .create(second, for: 2))
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 1, waiting: 1))
        XCTAssertEqual(state.connectionClosed(id, now: at(6)), .none, "a second close of the same ID is ignored")
        let next = state.connectionClosed(second, now: at(7))
        let third = newID(state, besides: [id, second])
        XCTAssertEqual(next, .create(third, for: 3))
        XCTAssertEqual(state.connectionClosed(third, now: at(8)), .none)
        XCTAssertTrue(state.keys.isEmpty, "a key without connections or waiters is forgotten")
    }

    func testACancelledWaiterLeavesTheQueue() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.request(key: "a", waiter: 2, checkStale: false, now: at(0))
        XCTAssertTrue(state.waiterCancelled(2, key: "a"))
        XCTAssertFalse(state.waiterCancelled(2, key: "a"))
        XCTAssertFalse(state.waiterCancelled(9, key: "nowhere"))
        XCTAssertEqual(state.released(id, now: at(10)), .pool(id, idleTimeout: .seconds(30)))
    }

    func testABackendClosingAnIdleConnectionWithinOneSecondMarksTheKey() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        _ = state.released(ids[1], now: at(0))
        XCTAssertEqual(state.connectionClosed(ids[0], now: at(1500)), .none)
        XCTAssertTrue(state.eagerCloses.marks.isEmpty, "1.5 s after the response is not eager")
        XCTAssertEqual(state.connectionClosed(ids[1], now: at(999)), .none)
        XCTAssertNotNil(state.eagerCloses.marks["a"])
        XCTAssertEqual(state.counts(for: "a").idle, 0)
    }

    func testClosingALeasedConnectionDoesNotMarkTheKey() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.connectionClosed(id, now: at(1))
        XCTAssertTrue(state.eagerCloses.marks.isEmpty)
    }

    func testTheIdleTimeoutClosesWithoutMarkingAndIgnoresLeasedConnections() {
        var state = State(limit: 4, idleTimeout: .milliseconds(100))
        let ids = leased(&state, waiters: [1, 2])
        XCTAssertEqual(state.released(ids[0], now: at(0)), .pool(ids[0], idleTimeout: .milliseconds(100)))
        XCTAssertEqual(state.idleTimeoutFired(ids[0], now: at(100)), .close(ids[0]))
        XCTAssertEqual(state.idleTimeoutFired(ids[1], now: at(100)), .ignore)
        XCTAssertEqual(state.idleTimeoutFired(ids[0], now: at(100)), .ignore)
        XCTAssertTrue(state.eagerCloses.marks.isEmpty)
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 1, waiting: 0))
    }

    // MARK: - release

    func testReleaseBeyondTheIdleBoundCloses() {
        var state = State(limit: 4, idleTimeout: .seconds(30), maxIdlePerKey: 1)
        let ids = leased(&state, waiters: [1, 2])
        XCTAssertEqual(state.released(ids[0], now: at(0)), .pool(ids[0], idleTimeout: .seconds(30)))
        XCTAssertEqual(state.released(ids[1], now: at(0)), .close(ids[1]))
        XCTAssertNil(state.connections[ids[1]])
    }

    func testReleasingAnUnknownOrIdleConnectionClosesIt() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.released(id, now: at(0))
        XCTAssertEqual(state.released(id, now: at(1)), .close(id), "already idle")
        XCTAssertEqual(state.counts(for: "a").idle, 1, "the idle connection itself is untouched")
        XCTAssertEqual(state.released(42, now: at(1)), .close(42))
    }

    func testAReleaseCompletesAConnectingConnection() {
        var state = State(limit: 4, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        XCTAssertEqual(state.released(id, now: at(0)), .pool(id, idleTimeout: .seconds(30)))
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 1, connecting: 0, waiting: 0))
    }

    func testTheBackendHavingClosedAtReleaseMarksTheKeyAndFreesTheSlot() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        _ = state.request(key: "a", waiter: 2, checkStale: false, now: at(0))
        let slot = state.closedAtRelease(id, now: at(10))
        XCTAssertEqual(slot, .create(newID(state, besides: [id]), for: 2))
        XCTAssertNotNil(state.eagerCloses.marks["a"])
        XCTAssertEqual(state.closedAtRelease(id, now: at(10)), .none, "unknown now")
    }

    // MARK: - eagerly closing backends

    func testOnAMarkedKeyANonRetryableRequestAtTheLimitReplacesTheOldestIdleConnection() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        // A connection the backend has closed by the time it is released marks the key.
        XCTAssertEqual(state.closedAtRelease(ids[1], now: at(10)), .none)
        let third = state.request(key: "a", waiter: 3, checkStale: true, now: at(20))
        let thirdID = newID(state, besides: ids)
        XCTAssertEqual(third, .create(thirdID, replacing: nil), "below the limit: a fresh connection, the idle one stays")
        XCTAssertEqual(state.counts(for: "a"), .init(open: 2, idle: 1, connecting: 1, waiting: 0))
        let fourth = state.request(key: "a", waiter: 4, checkStale: true, now: at(30))
        XCTAssertEqual(fourth, .create(newID(state, besides: ids + [thirdID]), replacing: ids[0]),
                       "at the limit, the idle connection makes room for a fresh one")
        XCTAssertNil(state.connections[ids[0]])
        XCTAssertEqual(state.counts(for: "a"), .init(open: 2, idle: 0, connecting: 2, waiting: 0))
        XCTAssertEqual(state.request(key: "a", waiter: 5, checkStale: true, now: at(40)), .enqueued)
    }

    func testOnAMarkedKeyAReleaseToANonRetryableWaiterReplacesTheConnection() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        // A retry's connection (beyond the limit) found closed at release marks the key.
        let fresh = state.requestFresh(key: "a")
        XCTAssertEqual(state.closedAtRelease(fresh, now: at(0)), .none)
        XCTAssertEqual(state.request(key: "a", waiter: 2, checkStale: true, now: at(0)), .enqueued)
        XCTAssertEqual(state.request(key: "a", waiter: 3, checkStale: false, now: at(0)), .enqueued)
        let release = state.released(id, now: at(10))
        let replacement = newID(state, besides: [id, fresh])
        XCTAssertEqual(release, .replace(id, with: replacement, for: 2))
        XCTAssertEqual(state.released(replacement, now: at(20)), .handOver(replacement, to: 3))
    }

    func testAMarkExpiresAfterFiveMinutes() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        _ = state.closedAtRelease(ids[1], now: at(0))
        let third = state.request(key: "a", waiter: 3, checkStale: true, now: at(299_000))
        XCTAssertEqual(third, .create(newID(state, besides: ids), replacing: nil))
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: true, now: at(300_000)), .peek(ids[0]))
        XCTAssertNil(state.eagerCloses.marks["a"], "the expired mark is forgotten")
    }

    func testMarksAreBoundedByEvictingTheOldest() {
        var marks = EagerCloseMarks(capacity: 2)
        marks.mark("a", now: at(0))
        marks.mark("b", now: at(10))
        marks.mark("a", now: at(20))
        marks.mark("c", now: at(30))
        XCTAssertEqual(Set(marks.marks.keys), ["a", "c"], "b was the oldest mark")
        XCTAssertTrue(marks.contains("a", now: at(40)))
        XCTAssertFalse(marks.contains("b", now: at(40)))
        marks.noteClose("d", idleSince: at(0), now: at(1000))
        XCTAssertNil(marks.marks["d"], "exactly one second is not within the window")
        marks.noteClose("d", idleSince: at(0), now: at(999))
        XCTAssertEqual(Set(marks.marks.keys), ["c", "d"])
    }

    // MARK: - fresh connections, limits, shutdown

    func testAFreshRequestIgnoresTheLimitAndTheExcessIsClosedOnRelease() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        let id = leased(&state, waiters: [1])[0]
        let fresh = state.requestFresh(key: "a")
        XCTAssertEqual(state.counts(for: "a").open, 2)
        XCTAssertEqual(state.released(fresh, now: at(0)), .close(fresh))
        XCTAssertEqual(state.released(id, now: at(0)), .pool(id, idleTimeout: .seconds(30)))
    }

    func testLoweringTheLimitClosesIdleConnectionsOldestFirst() {
        var state = State(limit: 3, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2, 3])
        for (offset, id) in ids.enumerated() { _ = state.released(id, now: at(offset)) }
        XCTAssertEqual(state.limitsChanged(limit: 1, idleTimeout: .seconds(5)), [.close(ids[0]), .close(ids[1])])
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 1, connecting: 0, waiting: 0))
        XCTAssertEqual(state.request(key: "a", waiter: 4, checkStale: false, now: at(10)), .lease(ids[2]))
        XCTAssertEqual(state.released(ids[2], now: at(20)), .pool(ids[2], idleTimeout: .seconds(5)))
    }

    func testRaisingTheLimitServesQueuedWaiters() {
        var state = State(limit: 1, idleTimeout: .seconds(30))
        _ = leased(&state, waiters: [1])
        _ = state.request(key: "a", waiter: 2, checkStale: false, now: at(0))
        _ = state.request(key: "a", waiter: 3, checkStale: false, now: at(0))
        _ = state.request(key: "a", waiter: 4, checkStale: false, now: at(0))
        XCTAssertEqual(state.limitsChanged(limit: 3, idleTimeout: .seconds(30)), [.create(1, for: 2), .create(2, for: 3)])
        XCTAssertEqual(state.counts(for: "a"), .init(open: 3, idle: 0, connecting: 3, waiting: 1))
    }

    func testCloseAllForgetsIdleConnectionsAndWaitersButKeepsLeasedOnes() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        let ids = leased(&state, waiters: [1, 2])
        _ = state.released(ids[0], now: at(0))
        let other = leased(&state, key: "b", waiters: [3, 4])
        _ = state.request(key: "b", waiter: 5, checkStale: false, now: at(0))
        let actions = state.closeAll()
        XCTAssertEqual(actions, .init(close: [ids[0]], dropped: [5]))
        XCTAssertEqual(state.counts(for: "a"), .init(open: 1, idle: 0, connecting: 1, waiting: 0))
        XCTAssertEqual(state.counts(for: "b"), .init(open: 2, idle: 0, connecting: 2, waiting: 0))
        XCTAssertEqual(state.connectionClosed(other[0], now: at(1)), .none)
    }
}
