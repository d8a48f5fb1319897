/// The bookkeeping of one worker's upstream pool as a pure state machine: no sockets, no
/// clock (every event that needs the time carries `now`), events in, actions out. Modelled on
/// async-http-client's `HTTPConnectionPool.StateMachine`; ``UpstreamPool`` is its driver.
///
/// A connection, identified by a ``ConnectionID`` that is never reused (a ``SlotMap`` ID), is in exactly one of
/// these states while the state machine knows it, and is forgotten once closed:
/// - **connecting**: created for a waiter (so already leased to it), TCP/TLS not up yet;
/// - **leased**: carrying one waiter's exchange;
/// - **peeking**: taken from the idle list, waiting for ``peekCompleted(_:stale:now:)`` (only
///   between a ``RequestAction/peek(_:)`` and that event, which the driver reports at once);
/// - **idle**: in its key's idle list, most recently used last (the warmest connection is the
///   least likely to have been closed by its backend, so it is reused first).
///
/// Invariants (checked by the randomized test after every event):
/// - every open connection is counted in its key's `open`, and idle ones are in its idle list
///   exactly once; a closed (forgotten) connection is in no list;
/// - no event except ``requestFresh(key:)`` makes a key's open count exceed ``limit`` (after
///   the limit is lowered, counts only shrink until they fit);
/// - a key's waiter queue holds at most ``maxWaitersPerKey`` waiters, served first in first out,
///   each at most once;
/// - a key never has a waiter it could serve while it has idle connections (only waiters
///   that yield, while requests that yield hold their share, ``yieldingShare``, wait beside
///   idle connections);
/// - requests that yield never hold more of a key's connections than ``yieldingShare`` (but for a
///   retry's ``requestFresh(key:)``);
/// - at most ``EagerCloseMarks/capacity`` keys are marked as closing connections eagerly.
struct UpstreamPoolState {
    /// Where a known connection is in its life (see the type's documentation).
    enum Phase: Equatable {
        /// Leased from creation; TCP/TLS setup not finished.
        case connecting
        /// Carrying an exchange.
        case leased
        /// Taken from the idle list (idle since `idleSince`) and being checked for staleness on
        /// behalf of a waiter.
        case peeking(WaiterID, idleSince: PoolInstant)
        /// In its key's idle list since `since`. (A ``PoolInstant``, not a resilient `Instant`,
        /// which made every copy of a connection a generic value-witness call.)
        case idle(since: PoolInstant)
    }

    /// One open connection.
    struct Connection: Equatable {
        /// Its key's slot in the state's key table (the key's name is there: a connection holds
        /// no String, so copying one retains nothing).
        let keySlot: Int
        /// Its state.
        var phase: Phase
        /// Leased, with its exchange paused on a client that does not read since then: a
        /// request that must queue for this key takes the connection that stalled first.
        var stalledSince: PoolInstant?
        /// Held (connecting, leased or peeked at) for a request that yields: counted in its
        /// key's ``Key/yieldingHeld``.
        var yielding = false

        /// Back in the idle list since `now` (no longer anyone's, so no longer stalled).
        mutating func pool(since now: PoolInstant) {
            phase = .idle(since: now)
            stalledSince = nil
        }

        /// Takes it from the idle list: leased, or — for a waiter that must check staleness —
        /// peeking on that waiter's behalf. Returns whether a peek is needed.
        mutating func take(peekingFor waiter: WaiterID?) -> Bool {
            guard let waiter, case .idle(let since) = phase else {
                phase = .leased
                return false
            }
            phase = .peeking(waiter, idleSince: since)
            return true
        }
    }

    /// A queued request.
    struct Waiter: Equatable {
        /// The driver's ID for it.
        let id: WaiterID
        /// Whether it could not be retried if a reused connection turned out closed: it must not
        /// reuse a connection to an eagerly closing backend, and a connection is peeked at before
        /// it gets one (idle, or handed over at a release).
        let checkStale: Bool
        /// Whether it queues behind every waiter that does not (one of many requests of one
        /// client connection: an HTTP/2 app with many streams waits behind other clients).
        var yields = false
    }

    /// Everything about one pool key (one backend); dropped once it has neither connections
    /// nor waiters.
    struct Key: Equatable {
        /// Open connections of this key, in any phase.
        var open = 0
        /// Of those, how many are connecting.
        var connecting = 0
        /// Idle connections, least recently used first.
        var idle: [ConnectionID] = []
        /// Queued waiters, oldest first, those that yield after the others.
        var waiters: [Waiter] = []
        /// Of the open connections, how many requests that yield hold.
        var yieldingHeld = 0

        /// Whether the first waiter may have a connection now: one that yields only while
        /// requests that yield hold less than `share`.
        func firstWaiterServable(share: Int) -> Bool {
            guard let first = waiters.first else { return false }
            return !first.yields || yieldingHeld < share
        }

        /// Queues `waiter`: last among its class (yielding waiters after the others).
        mutating func enqueue(_ waiter: Waiter) {
            if !waiter.yields, let firstYielding = waiters.firstIndex(where: \.yields) {
                waiters.insert(waiter, at: firstYielding)
            } else {
                waiters.append(waiter)
            }
        }

        /// What releasing a leased connection of this key does.
        enum ReleaseStep {
            /// The oldest waiter (already dequeued) gets it.
            case waiter(Waiter)
            /// Over the limit (after a lowered limit or a retry) or the idle list is full: close it.
            case overLimit
            /// Appended to the idle list.
            case pooled
        }

        /// Dequeues the oldest waiter (one that yields only below `share`), or pools `id` if the
        /// limits allow.
        mutating func release(_ id: ConnectionID, limit: Int, maxIdle: Int, share: Int) -> ReleaseStep {
            if firstWaiterServable(share: share) { return .waiter(waiters.removeFirst()) }
            if open > limit || idle.count >= maxIdle { return .overLimit }
            idle.append(id)
            return .pooled
        }
    }

    /// Open connections per key (connecting, leased and idle together) for ordinary requests.
    private(set) var limit: Int
    /// The most connections of a key that requests that yield hold together: three quarters of
    /// ``limit``. The rest stays for other clients: an HTTP/2 app with thousands of streams
    /// open that never reads would otherwise hold every connection, and another app's request
    /// would wait until one of them is taken back (a canary waited up to 230 ms).
    var yieldingShare: Int { limit - limit / 4 }
    /// How long a pooled connection may sit idle (the driver arms it on the socket).
    private(set) var idleTimeout: Duration
    /// Bound on each key's waiter queue.
    let maxWaitersPerKey: Int
    /// Bound on each key's idle list (a released connection beyond it is closed).
    let maxIdlePerKey: Int
    /// Every open connection.
    private(set) var connections = SlotMap<Connection>()
    /// Every key with connections or waiters, in slots.
    private var table = PoolKeyTable()
    /// Every key with connections or waiters, by name (for reports and tests).
    var keys: [String: Key] { table.byName }
    /// Keys whose backends close connections right after responding.
    private(set) var eagerCloses: EagerCloseMarks

    /// An empty pool.
    init(limit: Int, idleTimeout: Duration, maxWaitersPerKey: Int = 1024, maxIdlePerKey: Int = 128,
         maxMarkedKeys: Int = 1024) {
        self.limit = max(1, limit)
        self.idleTimeout = idleTimeout
        self.maxWaitersPerKey = max(0, maxWaitersPerKey)
        self.maxIdlePerKey = max(0, maxIdlePerKey)
        self.eagerCloses = EagerCloseMarks(capacity: maxMarkedKeys)
    }

    // MARK: - events

    /// A request for `key` wants a connection.
    ///
    /// `checkStale` marks a request that could not be retried if a reused connection turned out
    /// closed: it peeks at an idle connection before taking it, and it does not reuse at all for
    /// a key marked in ``eagerCloses`` (replacing the oldest idle connection when at the limit).
    /// `keyIndex`: the key's interned index (``UpstreamTarget/poolKeyIndex``), -1 if it has none.
    /// `yields`: the request queues (if it must) behind every other that does not yield.
    mutating func request(key: String, keyIndex: Int = -1, waiter: WaiterID, checkStale: Bool, yields: Bool = false,
                          now: PoolInstant) -> RequestAction {
        if yields, let slot = table.slot(of: key, index: keyIndex), table[slot: slot].yieldingHeld >= yieldingShare {
            // Their share is taken: it waits, even beside idle connections (kept for others).
            guard table[slot: slot].waiters.count < maxWaitersPerKey else { return .rejected }
            table[slot: slot].enqueue(Waiter(id: waiter, checkStale: checkStale, yields: true))
            return .enqueued
        }
        let avoidReuse = checkStale && eagerCloses.contains(key, now: now)
        if !avoidReuse, let slot = table.slot(of: key, index: keyIndex), let id = table[slot: slot].idle.popLast() {
            // One in-place access to the connection (each lookup hashes and copies it out).
            let peek = connections.modify(id) { $0.take(peekingFor: checkStale ? waiter : nil) }
            if yields { holdForYielding(id) }
            return peek ? .peek(id) : .lease(id)
        }
        let action = openOrQueue(key, Waiter(id: waiter, checkStale: checkStale, yields: yields), avoidingReuse: avoidReuse, now: now)
        if yields, case .create(let id, _) = action { holdForYielding(id) }
        return action
    }

    /// The result of the peek a ``RequestAction/peek(_:)`` asked for: `stale` when the backend
    /// had closed the idle connection or sent something on it.
    mutating func peekCompleted(_ id: ConnectionID, stale: Bool, now: PoolInstant) -> PeekAction {
        guard let connection = connections[id], case .peeking(let waiter, _) = connection.phase else {
            preconditionFailure("peekCompleted for connection \(id), which is not being peeked at")
        }
        guard stale else {
            connections.modify(id) { $0.phase = .leased }
            return .lease(id)
        }
        // The backend closed an idle connection: that may mark it as closing eagerly, which the
        // retried request (non-retryable, or it would not have peeked) then respects.
        let key = table.name(of: connection.keySlot)
        retire(id, closedByBackend: true, now: now)
        return .discard(id, then: request(key: key, waiter: waiter, checkStale: true, yields: connection.yielding, now: now))
    }

    /// A request that must get a new connection whatever the limit: the retry of a request whose
    /// reused connection turned out closed (that connection's slot may already be another
    /// waiter's). The only way a key exceeds ``limit``; the excess is closed on release.
    mutating func requestFresh(key: String) -> ConnectionID {
        create(key)
    }

    /// A connection finished its TCP (and TLS) setup.
    mutating func connected(_ id: ConnectionID) {
        guard case .connecting = connections[id]?.phase else { return }
        connections.modify(id) { $0.phase = .leased }
        table[slot: connections[id]!.keySlot].connecting -= 1
    }

    /// A leased connection finished a clean exchange with nothing beyond the response: it goes
    /// to the oldest waiter, or idle, or is closed.
    mutating func released(_ id: ConnectionID, now: PoolInstant) -> ReleaseAction {
        // On every keep-alive request: no hashing (the connection is in a slot, and it keeps
        // its key's slot).
        guard let connection = connections[id] else { return .close(id) }
        let slot = connection.keySlot
        switch connection.phase {
        case .leased: break
        case .connecting:
            connections.modify(id) { $0.phase = .leased }
            table[slot: slot].connecting -= 1
        case .idle, .peeking:
            // Idle or being checked: nothing the pool could lend out; close it.
            return .close(id)
        }
        if connection.yielding {
            connections.modify(id) { $0.yielding = false }
            table[slot: slot].yieldingHeld -= 1
        }
        switch table[slot: slot].release(id, limit: limit, maxIdle: maxIdlePerKey, share: yieldingShare) {
        case .waiter(let waiter):
            if waiter.checkStale && eagerCloses.contains(table.name(of: slot), now: now) {
                let key = table.name(of: slot)
                retire(id, closedByBackend: false, now: now)
                let fresh = create(key)
                if waiter.yields { holdForYielding(fresh) }
                return .replace(id, with: fresh, for: waiter.id)
            }
            if connection.stalledSince != nil { connections.modify(id) { $0.stalledSince = nil } }
            if waiter.yields { holdForYielding(id) }
            return .handOver(id, to: waiter.id)
        case .overLimit:
            retire(id, closedByBackend: false, now: now)
            return .close(id)
        case .pooled:
            connections.modify(id) { $0.pool(since: now) }
            return .pool(id, idleTimeout: idleTimeout)
        }
    }

    // MARK: - exchanges that stall on their clients

    /// The exchange on leased connection `id` paused on a client that does not read (no spool
    /// could take the rest) at `now`; a connection that stalled before keeps its first time.
    /// Returns the connection to reclaim when requests already wait for this key: the one of
    /// the key that stalled first (this one or an earlier one), whose exchange must give it up
    /// so clients that read are never starved by clients that do not.
    mutating func leaseStalled(_ id: ConnectionID, now: PoolInstant) -> ConnectionID? {
        guard let connection = connections[id], connection.phase == .leased else { return nil }
        if connection.stalledSince == nil {
            connections.modify(id) { $0.stalledSince = now }
        }
        return reclaimForQueue(table.name(of: connection.keySlot))
    }

    /// Requests wait for `key`: the stalled connection to take back for them
    /// (``takeOldestStalled(_:)``), when the first of them does not yield. One that yields is a
    /// stream of an app with many streams open: cutting another stalled response for it (most
    /// often of the same app, which reads none of them) only churned connections, reading a
    /// megabyte after another that nobody took while 800 such streams waited, and held up
    /// other clients' requests. It waits for a release, or for the stalled exchange's timeout.
    /// `keyIndex`: the key's interned index (``UpstreamTarget/poolKeyIndex``), -1 if it has none.
    mutating func reclaimForQueue(_ key: String, keyIndex: Int = -1) -> ConnectionID? {
        guard let slot = table.slot(of: key, index: keyIndex), let first = table[slot: slot].waiters.first, !first.yields else {
            return nil
        }
        return takeOldestStalled(key)
    }

    /// The exchange on `id` goes on (its client read again, or it ended): not a candidate any more.
    mutating func leaseResumed(_ id: ConnectionID) {
        if connections[id]?.stalledSince != nil { connections.modify(id) { $0.stalledSince = nil } }
    }

    /// A request had to queue for `key`: the connection of that key whose exchange stalled
    /// first, if any, to reclaim (taken once; it stays leased until its exchange lets it go).
    /// Only the slow path scans: a request that queues at the limit, or a lease that stalls.
    mutating func takeOldestStalled(_ key: String) -> ConnectionID? {
        guard let slot = table.slot(of: key) else { return nil }
        var oldest: (id: ConnectionID, since: PoolInstant)?
        for (id, connection) in connections where connection.keySlot == slot {
            guard let since = connection.stalledSince else { continue }
            if oldest == nil || since < oldest!.since { oldest = (id, since) }
        }
        guard let oldest else { return nil }
        connections.modify(oldest.id) { $0.stalledSince = nil }
        return oldest.id
    }

    /// Whether requests wait for a connection to `key` (a released one goes straight to them).
    func hasWaiters(_ key: String) -> Bool {
        !(table[key]?.waiters.isEmpty ?? true)
    }

    /// Whether a release of connection `id` that hands it straight to the request first in line
    /// for its key (the one ``released(_:now:)`` serves) must first peek at its socket: when that
    /// request could not be retried if the connection turned out closed (``Waiter/checkStale``),
    /// or when the response just completed had no body by rule (`bodilessResponse`: to a HEAD,
    /// a 204 or a 304, which some backends follow with a body anyway — bytes that must reach no
    /// other client). `mutating` only so that the driver's call reads its stored state in place:
    /// a non-mutating call on a class's stored struct copied the whole state (a retain and a
    /// release of each of its collections) on every release.
    mutating func handOverNeedsPeek(_ id: ConnectionID, bodilessResponse: Bool) -> Bool {
        guard let connection = connections[id], let first = table[slot: connection.keySlot].waiters.first else { return false }
        return first.checkStale || bodilessResponse
    }

    /// The name of the key in `slot` of the key table (a connection's key: `keySlot`).
    func keyName(ofSlot slot: Int) -> String { table.name(of: slot) }

    /// Whether the state knows `key` (it has connections or waiters).
    func knows(_ key: String) -> Bool { table.slot(of: key) != nil }

    /// The backend had already closed a leased connection when its exchange completed (seen at
    /// release): that is eager closing by definition. The state forgets the connection; the
    /// driver closes it.
    mutating func closedAtRelease(_ id: ConnectionID, now: PoolInstant) -> SlotAction {
        guard let connection = connections[id] else { return .none }
        let key = table.name(of: connection.keySlot)
        eagerCloses.mark(key, now: now)
        retire(id, closedByBackend: false, now: now)
        return serveWaiter(key)
    }

    /// A connection closed, for any reason (the session ended it, it failed, or its backend
    /// closed it or sent something while it was idle). Unknown IDs (connections the state told
    /// the driver to close) are ignored.
    mutating func connectionClosed(_ id: ConnectionID, now: PoolInstant) -> SlotAction {
        guard let connection = connections[id] else { return .none }
        if case .peeking = connection.phase {
            preconditionFailure("connection \(id) closed while being peeked at")
        }
        let key = table.name(of: connection.keySlot)
        retire(id, closedByBackend: true, now: now)
        return serveWaiter(key)
    }

    /// An idle connection's idle timeout expired (our own close: it does not mark the key).
    mutating func idleTimeoutFired(_ id: ConnectionID, now: PoolInstant) -> IdleTimeoutAction {
        guard case .idle = connections[id]?.phase else { return .ignore }
        retire(id, closedByBackend: false, now: now)
        return .close(id)
    }

    /// A queued waiter gave up. Returns whether it was still queued.
    @discardableResult
    mutating func waiterCancelled(_ waiter: WaiterID, key: String) -> Bool {
        guard let slot = table.slot(of: key),
              let index = table[slot: slot].waiters.firstIndex(where: { $0.id == waiter }) else { return false }
        table[slot: slot].waiters.remove(at: index)
        table.dropIfUnused(slot)
        return true
    }

    /// Reloaded settings: a lower limit closes idle connections of keys above it (oldest
    /// first); a higher one serves queued waiters. Rare, so it may return an array.
    mutating func limitsChanged(limit: Int, idleTimeout: Duration) -> [LimitsAction] {
        self.limit = max(1, limit)
        self.idleTimeout = idleTimeout
        var actions: [LimitsAction] = []
        for key in Array(keys.keys) {
            while let state = table[key], state.open > self.limit, let oldest = state.idle.first {
                retire(oldest, closedByBackend: false, now: nil)
                actions.append(.close(oldest))
            }
            while case .create(let id, let waiter) = serveWaiter(key) { actions.append(.create(id, for: waiter)) }
        }
        return actions
    }

    /// Shutdown: forgets every idle connection (for the driver to close) and every waiter.
    /// Leased connections stay until their sessions close them.
    mutating func closeAll() -> CloseAllActions {
        var actions = CloseAllActions()
        for slot in table.usedSlots {
            let state = table[slot: slot]
            actions.close += state.idle
            actions.dropped += state.waiters.map(\.id)
            // Waiters first: retiring the last connection drops the key.
            table[slot: slot].waiters.removeAll()
            for id in state.idle { retire(id, closedByBackend: false, now: nil) }
            table.dropIfUnused(slot)
        }
        return actions
    }

    // MARK: - queries

    /// Counts for `key` (zeros when unknown).
    func counts(for key: String) -> KeyCounts {
        let state = table[key] ?? Key()
        return KeyCounts(open: state.open, idle: state.idle.count, connecting: state.connecting, waiting: state.waiters.count)
    }

    // MARK: - transitions

    /// Opens a connection for `waiter` if the limit allows, makes room by replacing the oldest
    /// idle connection when the waiter must avoid reuse, or queues it (or rejects it when full).
    private mutating func openOrQueue(_ key: String, _ waiter: Waiter, avoidingReuse: Bool,
                                      now: PoolInstant) -> RequestAction {
        let state = table[key] ?? Key()
        if state.open < limit { return .create(create(key), replacing: nil) }
        if avoidingReuse, let oldest = state.idle.first {
            retire(oldest, closedByBackend: false, now: now)
            return .create(create(key), replacing: oldest)
        }
        guard state.waiters.count < maxWaitersPerKey else { return .rejected }
        table[slot: table.slotMaking(key)].enqueue(waiter)
        return .enqueued
    }

    /// Records a new connection (connecting, leased) and returns its ID.
    private mutating func create(_ key: String) -> ConnectionID {
        let slot = table.slotMaking(key)
        let id = connections.insert(Connection(keySlot: slot, phase: .connecting))
        table[slot: slot].open += 1
        table[slot: slot].connecting += 1
        return id
    }

    /// Forgets a connection. `closedByBackend` with the time: an idle connection closed soon
    /// after its last response marks its key.
    private mutating func retire(_ id: ConnectionID, closedByBackend: Bool, now: PoolInstant?) {
        guard let connection = connections.removeValue(forID: id) else { return }
        let slot = connection.keySlot
        table[slot: slot].open -= 1
        if connection.yielding { table[slot: slot].yieldingHeld -= 1 }
        switch connection.phase {
        case .connecting:
            table[slot: slot].connecting -= 1
        case .idle(let since), .peeking(_, let since):
            if case .idle = connection.phase, let index = table[slot: slot].idle.firstIndex(of: id) {
                table[slot: slot].idle.remove(at: index)
            }
            if closedByBackend, let now { eagerCloses.noteClose(table.name(of: slot), idleSince: since, now: now) }
        case .leased:
            break
        }
        table.dropIfUnused(slot)
    }

    /// Gives a free slot under the limit to the oldest waiter of `key` (one that yields only
    /// while requests that yield hold less than their share).
    private mutating func serveWaiter(_ key: String) -> SlotAction {
        guard let slot = table.slot(of: key), table[slot: slot].open < limit,
              table[slot: slot].firstWaiterServable(share: yieldingShare) else { return .none }
        let waiter = table[slot: slot].waiters.removeFirst()
        let id = create(key)
        if waiter.yields { holdForYielding(id) }
        return .create(id, for: waiter.id)
    }

    /// Counts connection `id` as held for a request that yields.
    private mutating func holdForYielding(_ id: ConnectionID) {
        guard let connection = connections[id], !connection.yielding else { return }
        connections.modify(id) { $0.yielding = true }
        table[slot: connection.keySlot].yieldingHeld += 1
    }
}
