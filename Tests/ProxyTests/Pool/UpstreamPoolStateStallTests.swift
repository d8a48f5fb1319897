import XCTest
@testable import Proxy

/// The pool's policy for exchanges that stall on their clients: which leased connection a
/// queued request takes back (``UpstreamPoolState/leaseStalled(_:now:)``,
/// ``UpstreamPoolState/takeOldestStalled(_:)``), without sockets or clocks.
final class UpstreamPoolStateStallTests: XCTestCase {
    typealias State = UpstreamPoolState

    private let start = PoolInstant.now
    private func at(_ ms: Int) -> PoolInstant { start + .milliseconds(ms) }

    /// `count` leased (connected) connections for `key`.
    private func leased(_ state: inout State, key: String, count: Int, firstWaiter: Int = 0) -> [State.ConnectionID] {
        (0..<count).map { index in
            guard case .create(let id, nil) = state.request(key: key, waiter: firstWaiter + index, checkStale: false, now: at(0)) else {
                XCTFail("expected a new connection")
                return -1
            }
            state.connected(id)
            return id
        }
    }

    func testTheConnectionThatStalledFirstIsTakenPerKey() {
        var state = State(limit: 8, idleTimeout: .seconds(30))
        let a = leased(&state, key: "x", count: 2)
        let y = leased(&state, key: "y", count: 1, firstWaiter: 10)
        XCTAssertNil(state.leaseStalled(a[1], now: at(5)), "nobody waits: nothing is reclaimed yet")
        XCTAssertNil(state.leaseStalled(a[0], now: at(1)))
        XCTAssertNil(state.leaseStalled(y[0], now: at(0)))
        XCTAssertEqual(state.takeOldestStalled("x"), a[0], "the first to stall, not the first marked")
        XCTAssertEqual(state.takeOldestStalled("x"), a[1])
        XCTAssertNil(state.takeOldestStalled("x"), "a connection is taken once")
        XCTAssertEqual(state.takeOldestStalled("y"), y[0], "keys are separate")
    }

    func testAStallKeepsItsFirstTimeAndAResumedConnectionIsNeverTaken() {
        var state = State(limit: 8, idleTimeout: .seconds(30))
        let ids = leased(&state, key: "x", count: 2)
        _ = state.leaseStalled(ids[0], now: at(0))
        _ = state.leaseStalled(ids[1], now: at(1))
        _ = state.leaseStalled(ids[0], now: at(9000))
        XCTAssertEqual(state.takeOldestStalled("x"), ids[0], "a second pause does not make a connection younger")
        _ = state.leaseStalled(ids[0], now: at(10_000))
        state.leaseResumed(ids[1])
        state.leaseResumed(ids[1])
        XCTAssertEqual(state.takeOldestStalled("x"), ids[0], "the resumed one read again: not a candidate")
        XCTAssertNil(state.takeOldestStalled("x"))
        state.leaseResumed(999)
    }

    func testAStallWhileRequestsWaitReclaimsAtOnce() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        let ids = leased(&state, key: "x", count: 2)
        XCTAssertEqual(state.request(key: "x", waiter: 7, checkStale: false, now: at(2)), .enqueued)
        XCTAssertNil(state.takeOldestStalled("x"), "no connection has stalled yet")
        XCTAssertEqual(state.leaseStalled(ids[1], now: at(3)), ids[1], "the waiter takes it as soon as it stalls")
        XCTAssertNil(state.takeOldestStalled("x"))
    }

    func testOnlyLeasedConnectionsStallAndAReleaseClearsTheMark() {
        var state = State(limit: 2, idleTimeout: .seconds(30))
        let ids = leased(&state, key: "x", count: 2)
        _ = state.leaseStalled(ids[0], now: at(1))
        XCTAssertEqual(state.released(ids[0], now: at(2)), .pool(ids[0], idleTimeout: .seconds(30)))
        XCTAssertNil(state.takeOldestStalled("x"), "an idle connection is nobody's to give up")
        XCTAssertNil(state.leaseStalled(ids[0], now: at(3)), "idle connections do not stall")
        XCTAssertNil(state.takeOldestStalled("x"))
        // Handed straight to a queued request: the new exchange has not stalled.
        _ = state.leaseStalled(ids[1], now: at(4))
        XCTAssertEqual(state.request(key: "x", waiter: 9, checkStale: false, now: at(5)), .lease(ids[0]))
        XCTAssertEqual(state.request(key: "x", waiter: 10, checkStale: false, now: at(5)), .enqueued)
        XCTAssertEqual(state.takeOldestStalled("x"), ids[1])
        _ = state.leaseStalled(ids[1], now: at(6))
        XCTAssertEqual(state.released(ids[1], now: at(7)), .handOver(ids[1], to: 10))
        XCTAssertNil(state.takeOldestStalled("x"), "handed over: its mark went with the old exchange")
        // Closed while stalled: forgotten with the connection.
        _ = state.leaseStalled(ids[1], now: at(8))
        _ = state.connectionClosed(ids[1], now: at(9))
        XCTAssertNil(state.takeOldestStalled("x"))
    }
}
