import TestSupport
import Foundation
import XCTest
@testable import Proxy

/// Drives ``UpstreamPoolState`` with thousands of random event sequences from seeded generators
/// and checks its invariants after every event. A failure prints the seed; set
/// `POOL_STATE_SEED=<seed>` to replay just that one, `POOL_STATE_SEEDS=<count>` to run the first
/// `count` of the 200 (`make test`'s ThreadSanitizer suite runs 50: the test is one thread's
/// logic, which the AddressSanitizer suite runs whole, and under TSan it was the suite's slowest
/// test, ~20 s of generic code at `-Onone`).
final class UpstreamPoolStateRandomTests: XCTestCase {
    private static let keys = ["a", "b", "c", "d"]
    private static let seeds = 200
    private static let eventsPerSeed = 500

    func testRandomEventSequencesKeepEveryInvariant() {
        let seeds: [UInt64]
        if let fixed = ProcessInfo.processInfo.environment["POOL_STATE_SEED"].flatMap(UInt64.init) {
            seeds = [fixed]
        } else {
            var picker = SplitMix64(seed: 0x5EED)
            let count = ProcessInfo.processInfo.environment["POOL_STATE_SEEDS"].flatMap(Int.init).map { min(max($0, 1), Self.seeds) }
                ?? Self.seeds
            seeds = (0..<count).map { _ in picker.next() }
        }
        for seed in seeds {
            if let failure = run(seed: seed) {
                XCTFail("seed \(seed) (replay with POOL_STATE_SEED=\(seed)): \(failure)")
                return
            }
        }
    }

    /// Runs one sequence; returns the first violation with the step and event that caused it.
    private func run(seed: UInt64) -> String? {
        var rng = SplitMix64(seed: seed)
        // Small bounds so queues fill, idle lists overflow and marks get evicted.
        let state = UpstreamPoolState(limit: Int.random(in: 1...3, using: &rng), idleTimeout: .seconds(30),
                                      maxWaitersPerKey: Int.random(in: 1...4, using: &rng),
                                      maxIdlePerKey: Int.random(in: 1...3, using: &rng), maxMarkedKeys: 2)
        var model = PoolStateModel(state: state, rng: rng, now: .now)
        for step in 0..<Self.eventsPerSeed {
            let openBefore = Dictionary(uniqueKeysWithValues: Self.keys.map { ($0, model.state.counts(for: $0).open) })
            let event = randomEvent(&model)
            if let failure = model.failure { return "step \(step), \(event.describe()): \(failure)" }
            if let violation = invariantViolation(model, openBefore: openBefore, after: event) {
                return "step \(step), after \(event.describe()): \(violation)"
            }
        }
        return nil
    }

    /// Picks and applies one event; returns what it was.
    private func randomEvent(_ model: inout PoolStateModel) -> Event {
        // Mostly small steps (eager closes within the 1 s window), sometimes past the 300 s memory.
        model.now += Int.random(in: 0...20, using: &model.rng) == 0 ? .seconds(400) : .milliseconds(Int.random(in: 0...700, using: &model.rng))
        let now = model.now
        let key = Self.keys.randomElement(using: &model.rng)!
        let leasedID = model.leased.keys.sorted().randomElement(using: &model.rng)
        let anyID = model.created.randomElement(using: &model.rng)
        switch Int.random(in: 0..<110, using: &model.rng) {
        case 0..<35:
            let waiter = model.nextWaiter
            model.nextWaiter += 1
            let checkStale = Bool.random(using: &model.rng)
            let action = model.state.request(key: key, waiter: waiter, checkStale: checkStale, now: now)
            model.perform(action, waiter: waiter, key: key)
            return Event { "request(\(key), waiter \(waiter), checkStale \(checkStale)) -> \(action)" }
        case 35..<55:
            guard let id = leasedID else { return Event { "nothing to release" } }
            let action = model.state.released(id, now: now)
            model.stalled[id] = nil  // whoever has it next has not stalled
            model.perform(action, released: id)
            return Event { "released(\(id)) -> \(action)" }
        case 55..<58:
            guard let id = leasedID else { return Event { "nothing to release" } }
            let key = model.keyOf[id]!
            let action = model.state.closedAtRelease(id, now: now)
            model.close(id)
            model.perform(action, key: key)
            return Event { "closedAtRelease(\(id)) -> \(action)" }
        case 58..<70:
            // Any connection, including closed ones (a late report must be ignored).
            guard let id = anyID else { return Event { "nothing to close" } }
            let key = model.keyOf[id]!
            let wasClosed = model.closed.contains(id)
            let action = model.state.connectionClosed(id, now: now)
            if wasClosed {
                if action != .none { model.fail("closing the closed connection \(id) did \(action)") }
            } else {
                model.close(id)
            }
            model.perform(action, key: key)
            return Event { "connectionClosed(\(id)) -> \(action)" }
        case 70..<80:
            guard let id = anyID else { return Event { "nothing to connect" } }
            model.state.connected(id)
            return Event { "connected(\(id))" }
        case 80..<86:
            guard let (queueKey, waiters) = model.queued.filter({ !$0.value.isEmpty }).sorted(by: { $0.key < $1.key })
                .randomElement(using: &model.rng), let waiter = waiters.randomElement(using: &model.rng) else {
                return Event { "nobody to cancel" }
            }
            let removed = model.state.waiterCancelled(waiter, key: queueKey)
            if !removed { model.fail("queued waiter \(waiter) was not in the state's queue") }
            model.queued[queueKey]!.removeAll { $0 == waiter }
            return Event { "waiterCancelled(\(waiter), \(queueKey))" }
        case 86..<92:
            guard let id = anyID else { return Event { "no idle timeout" } }
            let wasIdle = model.idle.contains(id)
            let action = model.state.idleTimeoutFired(id, now: now)
            if action != (wasIdle ? .close(id) : .ignore) { model.fail("idle timeout of \(id) (idle: \(wasIdle)) did \(action)") }
            if wasIdle { model.close(id) }
            return Event { "idleTimeoutFired(\(id)) -> \(action)" }
        case 92..<96:
            let waiter = model.nextWaiter
            model.nextWaiter += 1
            let id = model.state.requestFresh(key: key)
            model.serve(waiter, id, key: key, fresh: true)
            return Event(requestFresh: true) { "requestFresh(\(key)) -> \(id)" }
        case 96..<99:
            let limit = Int.random(in: 1...4, using: &model.rng)
            let actions = model.state.limitsChanged(limit: limit, idleTimeout: .seconds(30))
            for action in actions {
                switch action {
                case .close(let id):
                    model.takeIdle(id, key: nil, "limit close")
                    model.close(id)
                case .create(let id, let waiter):
                    guard let queueKey = model.queued.first(where: { $0.value.first == waiter })?.key else {
                        model.fail("limit change served waiter \(waiter), which heads no queue")
                        break
                    }
                    model.perform(.create(id, for: waiter), key: queueKey)
                }
            }
            return Event { "limitsChanged(\(limit)) -> \(actions)" }
        case 100..<106:
            // An exchange pauses on its client (any connection: only leased ones can stall).
            guard let id = anyID else { return Event { "nothing to stall" } }
            let key = model.keyOf[id]!
            let leased = model.leased[id] != nil && model.state.connections[id]?.phase == .leased
            if leased && model.stalled[id] == nil { model.stalled[id] = now }
            let reclaimed = model.state.leaseStalled(id, now: now)
            model.takeStalled(reclaimed, key: key, eligible: leased && !model.queued[key, default: []].isEmpty, "leaseStalled(\(id))")
            return Event { "leaseStalled(\(id)) -> \(String(describing: reclaimed))" }
        case 106..<108:
            guard let id = anyID else { return Event { "nothing to resume" } }
            model.state.leaseResumed(id)
            model.stalled[id] = nil
            return Event { "leaseResumed(\(id))" }
        case 108..<110:
            let reclaimed = model.state.takeOldestStalled(key)
            model.takeStalled(reclaimed, key: key, eligible: true, "takeOldestStalled(\(key))")
            return Event { "takeOldestStalled(\(key)) -> \(String(describing: reclaimed))" }
        default:
            let actions = model.state.closeAll()
            if Set(actions.close) != model.idle { model.fail("closeAll closed \(actions.close), idle were \(model.idle)") }
            if Set(actions.dropped) != Set(model.queued.values.joined()) { model.fail("closeAll dropped \(actions.dropped)") }
            for id in actions.close { model.close(id) }
            model.queued.removeAll()
            return Event { "closeAll -> \(actions)" }
        }
    }

    /// One applied event. Its description is made only for a failure report: describing an
    /// action reflects over it, which took most of this test's time (over a minute under each
    /// sanitizer, for the 100,000 events).
    private struct Event {
        /// `requestFresh` may open a connection over the limit.
        let requestFresh: Bool
        let describe: () -> String

        init(requestFresh: Bool = false, _ describe: @escaping () -> String) {
            self.requestFresh = requestFresh
            self.describe = describe
        }
    }

    /// The first invariant that does not hold, if any.
    private func invariantViolation(_ model: PoolStateModel, openBefore: [String: Int], after event: Event) -> String? {
        let state = model.state
        // Every connection ever made is in exactly one of idle, leased and closed: no open one
        // (idle or leased) is in two of them, every one is known, and the counts add up (the
        // model only closes connections it knows). Checked over the open connections, not every
        // one ever made: this runs every step.
        for id in model.idle {
            guard let key = model.keyOf[id] else { return "unknown connection \(id) is idle" }
            if model.leased[id] != nil || model.closed.contains(id) { return "connection \(id) of \(key) is idle and leased or closed" }
        }
        for id in model.leased.keys {
            guard let key = model.keyOf[id] else { return "unknown connection \(id) is leased" }
            if model.closed.contains(id) { return "connection \(id) of \(key) is leased and closed" }
        }
        if model.idle.count + model.leased.count + model.closed.count != model.keyOf.count {
            return "\(model.keyOf.count) connections made, \(model.idle.count) idle + \(model.leased.count) leased + \(model.closed.count) closed"
        }
        let open = model.idle.union(model.leased.keys)
        if Set(state.connections.keys) != open { return "state knows \(state.connections.keys.sorted()), open are \(open.sorted())" }
        for (id, connection) in state.connections {
            if case .peeking = connection.phase { return "connection \(id) left peeking" }
            var idleInState = false
            if case .idle = connection.phase { idleInState = true }
            if idleInState != model.idle.contains(id) { return "connection \(id) is \(connection.phase) in the state" }
            if state.keyName(ofSlot: connection.keySlot) != model.keyOf[id] {
                return "connection \(id) of \(model.keyOf[id] ?? "?") keeps the slot of \(state.keyName(ofSlot: connection.keySlot))"
            }
        }
        for (key, entry) in state.keys {
            if entry.open == 0 && entry.waiters.isEmpty { return "unused key \(key) kept" }
        }
        // One pass over the connections, not one per key.
        var connectingByKey: [String: Int] = [:]
        for connection in state.connections.values where connection.phase == .connecting {
            connectingByKey[state.keyName(ofSlot: connection.keySlot), default: 0] += 1
        }
        for key in Self.keys {
            let entry = state.keys[key] ?? UpstreamPoolState.Key()
            let modelIdle = model.idle.filter { model.keyOf[$0] == key }
            if entry.idle.count != Set(entry.idle).count { return "duplicate in \(key)'s idle list \(entry.idle)" }
            if Set(entry.idle) != modelIdle { return "\(key)'s idle list \(entry.idle) vs idle \(modelIdle.sorted())" }
            if entry.idle.contains(where: { model.closed.contains($0) }) { return "closed connection in \(key)'s idle list" }
            let modelOpen = open.filter { model.keyOf[$0] == key }.count
            if entry.open != modelOpen { return "\(key) counts \(entry.open) open, really \(modelOpen)" }
            let connecting = connectingByKey[key, default: 0]
            if entry.connecting != connecting { return "\(key) counts \(entry.connecting) connecting, really \(connecting)" }
            if entry.waiters.map(\.id) != model.queued[key, default: []] {
                return "\(key)'s queue \(entry.waiters.map(\.id)) vs \(model.queued[key, default: []])"
            }
            if entry.waiters.count > state.maxWaitersPerKey { return "\(key)'s queue exceeds its bound" }
            if !entry.waiters.isEmpty && !entry.idle.isEmpty { return "\(key) has waiters while it has idle connections" }
            if entry.open > state.limit && entry.open > openBefore[key, default: 0] && !event.requestFresh {
                return "\(key) grew to \(entry.open) open connections over the limit \(state.limit)"
            }
        }
        if state.eagerCloses.marks.count > state.eagerCloses.capacity { return "too many eager-close marks" }
        for (id, connection) in state.connections where (connection.stalledSince != nil) != (model.stalled[id] != nil) {
            return "connection \(id) stalled in the state: \(connection.stalledSince != nil), in the model: \(model.stalled[id] != nil)"
        }
        if let stray = model.stalled.keys.first(where: { model.leased[$0] == nil }) { return "stall mark on \(stray), which is not leased" }
        return nil
    }
}
