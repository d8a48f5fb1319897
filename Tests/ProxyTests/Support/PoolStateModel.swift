import TestSupport

@testable import Proxy

/// A simulated driver for ``UpstreamPoolState``: performs every action on its own record of the
/// pool (which connections exist, who holds what, who waits) and reports the first action that
/// contradicts that record or an invariant. Used by the randomized test.
struct PoolStateModel {
    typealias ID = UpstreamPoolState.ConnectionID
    typealias Waiter = UpstreamPoolState.WaiterID

    var state: UpstreamPoolState
    var rng: SplitMix64
    var now: PoolInstant
    /// The key of every connection ever created.
    var keyOf: [ID: String] = [:]
    /// Every connection ever created, in the order they were (the random test picks from it:
    /// sorting `keyOf`'s keys every step took 40% of its time).
    var created: [ID] = []
    var idle: Set<ID> = []
    var leased: [ID: Waiter] = [:]
    var closed: Set<ID> = []
    /// Leased connections whose exchange stalled on its client, and since when.
    var stalled: [ID: PoolInstant] = [:]
    /// Queued waiters per key, oldest first, as the actions told us.
    var queued: [String: [Waiter]] = [:]
    /// Waiters that got a connection.
    var served: Set<Waiter> = []
    var nextWaiter: Waiter = 0
    /// The first contradiction found.
    var failure: String?

    /// Records a contradiction (the first one wins).
    mutating func fail(_ message: String) {
        if failure == nil { failure = message }
    }

    // MARK: - performing actions

    /// A waiter gets connection `id`; `fresh` when the action created it for `key`.
    mutating func serve(_ waiter: Waiter, _ id: ID, key: String, fresh: Bool) {
        if served.contains(waiter) { fail("waiter \(waiter) served twice") }
        served.insert(waiter)
        if fresh {
            if keyOf[id] != nil { fail("connection ID \(id) created twice") }
            keyOf[id] = key
            created.append(id)
        } else if keyOf[id] != key {
            fail("connection \(id) of key \(keyOf[id] ?? "?") handed to a waiter for \(key)")
        }
        if leased[id] != nil { fail("connection \(id) leased twice") }
        if idle.contains(id) { fail("connection \(id) leased while idle") }
        if closed.contains(id) { fail("closed connection \(id) leased") }
        leased[id] = waiter
    }

    /// Takes an idle connection that an action names (to lease, peek at or close it).
    mutating func takeIdle(_ id: ID, key: String?, _ why: String) {
        if !idle.contains(id) { fail("\(why): connection \(id) is not idle") }
        if let key, keyOf[id] != key { fail("\(why): connection \(id) belongs to \(keyOf[id] ?? "?"), not \(key)") }
        idle.remove(id)
    }

    mutating func close(_ id: ID) {
        if keyOf[id] == nil { fail("unknown connection \(id) closed") }
        if closed.contains(id) { fail("connection \(id) closed twice") }
        idle.remove(id)
        leased[id] = nil
        stalled[id] = nil
        closed.insert(id)
    }

    /// Takes the stall mark the state reclaimed (`taken`) for `key`, which must be one of the
    /// key's earliest stalls, or checks that nothing was taken when no mark is eligible.
    mutating func takeStalled(_ taken: ID?, key: String, eligible: Bool, _ why: String) {
        let marks = stalled.filter { keyOf[$0.key] == key }
        guard eligible, let earliest = marks.values.min() else {
            if let taken { fail("\(why) reclaimed \(taken) with nothing eligible") }
            return
        }
        guard let taken else { return fail("\(why) reclaimed nothing; \(marks.keys.sorted()) stalled") }
        if marks[taken] != earliest { fail("\(why) reclaimed \(taken), not one that stalled first (\(marks))") }
        stalled[taken] = nil
    }

    /// Removes the head of `key`'s queue, which must be `waiter` (first in, first out).
    mutating func dequeue(_ waiter: Waiter, key: String) {
        guard let head = queued[key]?.first else { return fail("waiter \(waiter) served from \(key)'s empty queue") }
        if head != waiter { fail("waiter \(waiter) served before \(head) (not FIFO) on \(key)") }
        queued[key]!.removeFirst()
    }

    mutating func perform(_ action: UpstreamPoolState.RequestAction, waiter: Waiter, key: String) {
        switch action {
        case .lease(let id):
            takeIdle(id, key: key, "lease")
            serve(waiter, id, key: key, fresh: false)
        case .peek(let id):
            takeIdle(id, key: key, "peek")
            let stale = Bool.random(using: &rng)
            switch state.peekCompleted(id, stale: stale, now: now) {
            case .lease(let leasedID):
                if stale || leasedID != id { fail("peek of \(id) (stale: \(stale)) leased \(leasedID)") }
                serve(waiter, id, key: key, fresh: false)
            case .discard(let discarded, let then):
                if !stale || discarded != id { fail("peek of \(id) (stale: \(stale)) discarded \(discarded)") }
                close(id)
                perform(then, waiter: waiter, key: key)
            }
        case .create(let id, let replacing):
            if let replacing {
                takeIdle(replacing, key: key, "replace")
                close(replacing)
            }
            serve(waiter, id, key: key, fresh: true)
        case .enqueued:
            queued[key, default: []].append(waiter)
        case .rejected:
            if queued[key, default: []].count < state.maxWaitersPerKey { fail("waiter \(waiter) rejected below the queue bound") }
        }
    }

    mutating func perform(_ action: UpstreamPoolState.SlotAction, key: String) {
        guard case .create(let id, let waiter) = action else { return }
        dequeue(waiter, key: key)
        serve(waiter, id, key: key, fresh: true)
    }

    mutating func perform(_ action: UpstreamPoolState.ReleaseAction, released id: ID) {
        let key = keyOf[id] ?? "?"
        leased[id] = nil
        switch action {
        case .pool(let pooled, _):
            if pooled != id { fail("release of \(id) pooled \(pooled)") }
            idle.insert(id)
        case .handOver(let handed, let waiter):
            if handed != id { fail("release of \(id) handed over \(handed)") }
            dequeue(waiter, key: key)
            serve(waiter, id, key: key, fresh: false)
        case .replace(let old, let new, let waiter):
            if old != id { fail("release of \(id) replaced \(old)") }
            close(id)
            dequeue(waiter, key: key)
            serve(waiter, new, key: key, fresh: true)
        case .close(let closedID):
            if closedID != id { fail("release of \(id) closed \(closedID)") }
            close(id)
        }
    }
}
