import EventLoop
import HTTP2

/// A request waiting for a connection because its upstream is at `maxConnectionsPerUpstream`.
protocol UpstreamWaiter: AnyObject {
    /// A connection (new or reused) is now the waiter's.
    func pool(didProvide upstream: UpstreamConnection)
    /// Where the pool queued it (set by the pool while it waits; read by
    /// ``UpstreamPool/cancel(_:key:)``).
    var poolTicket: Int { get set }
}

/// What ``UpstreamPool/acquire(_:waiter:checkStale:)`` produced.
enum PoolLease {
    /// A connection (idle and checked, or new and connecting) is the caller's now.
    case ready(UpstreamConnection)
    /// The upstream is at its limit: the waiter is queued and later gets
    /// ``UpstreamWaiter/pool(didProvide:)``, unless it calls ``UpstreamPool/cancel(_:key:)`` first.
    case queued
    /// The upstream is at its limit and its queue is full: answer 503.
    case overloaded
}

/// What ``UpstreamPool/release(_:)`` did with a connection.
enum PoolReleaseOutcome: Equatable {
    /// It is idle in the pool.
    case pooled
    /// It went straight to a queued request.
    case handedOver
    /// It was closed (too many idle connections, a lowered limit, its backend had closed it,
    /// it could not be reused, or a queued request needed a fresh connection instead).
    case closed
    /// It was closed because the backend sent bytes beyond the complete response (they would
    /// otherwise be read as the next request's response).
    case discardedUnexpectedBytes
}

/// Connections to backends on one worker loop: the driver of ``UpstreamPoolState``. It owns
/// the ``UpstreamConnection`` objects by ID, feeds every event to the state machine and
/// performs the actions it returns (open, lend, close, peek, hand over).
final class UpstreamPool {
    /// A queued request and where it wants to go (a slot freed later opens a connection there).
    private struct Queued {
        let waiter: any UpstreamWaiter
        let target: UpstreamTarget
    }

    private let loop: EventLoop
    private var state: UpstreamPoolState
    private var connectTimeout: Duration
    /// Every open connection the state machine knows, by ID.
    private var connections = SlotMirror<UpstreamConnection>()
    /// Queued requests by waiter ID: the IDs are the slots' (each waiter also keeps its own,
    /// ``UpstreamWaiter/poolTicket``, for a cancel). No hashing: two dictionaries, by ID and by
    /// waiter object, cost a queued request about 350 instructions of SipHash and probing.
    private var queued = SlotMap<Queued>()
    /// `host:port` per pool key with open connections, for metrics.
    private var labels: [String: String] = [:]
    /// Completed TLS handshakes by backend label (at most ``ProxyMetrics/maxUpstreamSeries``
    /// labels, then `other`).
    private(set) var tlsHandshakes: [String: UInt64] = [:]
    /// Of those, the ones that resumed a session.
    private(set) var tlsResumed: [String: UInt64] = [:]
    /// Makes the stream for a new connection instead of resolving and connecting (tests drive
    /// an in-memory stream this way); `nil`: real sockets.
    var connector: ((UpstreamTarget) -> any ByteStream)?
    /// The HTTP/2 connections of `upstreamProtocol: h2`/`h2c` targets (made when first needed).
    private(set) lazy var http2 = HTTP2Upstreams(pool: self, loop: loop, idleTimeout: idleTimeout, settingsTimeout: connectTimeout,
                                                 blocks: http2Blocks)
    /// nghttp2's allocator for the worker's HTTP/2 sessions (nil: the C library's).
    private let http2Blocks: HTTP2BlockCache?
    private var idleTimeout: Duration

    /// An empty pool on `loop`; see ``UpstreamPoolState`` for the limits.
    init(loop: EventLoop, limit: Int, connectTimeout: Duration, idleTimeout: Duration, maxIdlePerKey: Int = 128,
         maxWaitersPerKey: Int = 1024, http2Blocks: HTTP2BlockCache? = nil) {
        self.loop = loop
        self.http2Blocks = http2Blocks
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.state = UpstreamPoolState(limit: limit, idleTimeout: idleTimeout, maxWaitersPerKey: maxWaitersPerKey,
                                       maxIdlePerKey: maxIdlePerKey)
    }

    /// An idle connection to `target`, a new one, a place in the queue, or `.overloaded`.
    ///
    /// `checkStale` marks a request that could not be retried if a reused connection turned out
    /// closed (a POST): it peeks at an idle connection before reuse (one extra syscall), and it
    /// does not reuse at all for a backend seen closing connections right after responses — the
    /// peek cannot win the race against a close that is still on its way.
    func acquire(_ target: UpstreamTarget, waiter: any UpstreamWaiter, checkStale: Bool, yields: Bool = false) -> PoolLease {
        // The ID the waiter is queued under if it is (an ID not used goes to the next request;
        // the state machine keeps none of a request it did not queue).
        let waiterID = queued.nextID
        let now = PoolInstant.now
        // What the pool lends for an HTTP/2 upstream is a lease, which opens a fresh stream
        // on a live connection for every request: it cannot be stale, so it is neither peeked at
        // nor passed over for a key marked as closing eagerly (one lease ended early had made
        // every later POST open a new lease and close an idle one: ~14k instructions a gRPC call).
        // (An `auto` target's key may still hold HTTP/1.1 sockets from before it agreed on h2:
        // its requests are checked as before.)
        let stale = checkStale && target.http != .h2
        var action = state.request(key: target.poolKey, keyIndex: target.poolKeyIndex, waiter: waiterID, checkStale: stale,
                                   yields: yields, now: now)
        while true {
            switch action {
            case .lease(let id):
                return .ready(lend(id))
            case .peek(let id):
                // A backend that closed its end while the connection sat idle must not get a
                // request that cannot be retried (idempotent ones are retried instead).
                let stale = connections[id]?.peerActivity(peek: true) != .quiet
                switch state.peekCompleted(id, stale: stale, now: now) {
                case .lease(let leased):
                    return .ready(lend(leased))
                case .discard(let discarded, let then):
                    discard(discarded)
                    action = then
                }
            case .create(let id, let replacing):
                if let replacing { discard(replacing) }
                return .ready(open(id, target))
            case .enqueued:
                let id = queued.insert(Queued(waiter: waiter, target: target))
                assert(id == waiterID, "a waiter is queued under the ID the state machine was given")
                waiter.poolTicket = id
                return .queued
            case .rejected:
                return .overloaded
            }
        }
    }

    /// Whether the pool's connections for `target` are HTTP/2 stream leases
    /// (``UpstreamConnection/open(timeout:)`` makes one for the same targets).
    func carriesHTTP2Streams(_ target: UpstreamTarget) -> Bool {
        target.http == .h2 || (target.http == .negotiated && http2.speaksHTTP2(key: target.poolKey))
    }

    /// Always a new connection (a retry after a stale pooled one failed), even above the limit.
    func acquireFresh(_ target: UpstreamTarget) -> UpstreamConnection {
        open(state.requestFresh(key: target.poolKey), target)
    }

    /// Whether requests are queued for a connection to `key`.
    func hasWaiters(key: String) -> Bool { state.hasWaiters(key) }

    /// `upstream`'s exchange paused on a client that does not read; if requests wait for its
    /// key, the connection that stalled first is reclaimed from its exchange now.
    func stalled(_ upstream: UpstreamConnection) {
        if let id = state.leaseStalled(upstream.id, now: PoolInstant.now) { reclaim(id) }
    }

    /// `upstream`'s exchange goes on (its client reads again, or it ends).
    func resumed(_ upstream: UpstreamConnection) {
        state.leaseResumed(upstream.id)
    }

    /// A request just queued for `target`: the connection of its key whose exchange stalled
    /// first, if any, is reclaimed (its response is cut short, which frees its slot for the queue).
    func reclaimStalled(for target: UpstreamTarget) {
        if let id = state.reclaimForQueue(target.poolKey, keyIndex: target.poolKeyIndex) { reclaim(id) }
    }

    private func reclaim(_ id: UpstreamPoolState.ConnectionID) {
        guard let upstream = connections[id], let owner = upstream.owner else { return }
        owner.upstreamWanted(upstream)
    }

    /// Forgets a queued waiter (it gave up).
    func cancel(_ waiter: any UpstreamWaiter, key: String) {
        let id = waiter.poolTicket
        // (Its ticket may be an old one, whose slot now holds another waiter.)
        guard let entry = queued[id], entry.waiter === waiter else { return }
        queued.removeValue(forID: id)
        state.waiterCancelled(id, key: key)
    }

    /// Returns a connection whose exchange completed cleanly. Pools it only if nothing arrived
    /// beyond the response: its input is empty and no close was seen (and, when it goes straight
    /// to a queued request that could not be retried, or after a response without a body by
    /// rule — `bodilessResponse` — a non-blocking peek sees neither bytes nor a close).
    @discardableResult
    func release(_ upstream: UpstreamConnection, bodilessResponse: Bool = false) -> PoolReleaseOutcome {
        upstream.owner = nil
        // An HTTP/2 lease leaves the stream its exchange used (one still open is reset): the next
        // request opens its own.
        upstream.http2Stream?.leaveFinishedStream()
        guard !upstream.isClosed, connections[upstream.id] === upstream, upstream.isConnected else {
            upstream.close()
            return .closed
        }
        let now = PoolInstant.now
        // A connection handed straight to a queued request that could not be retried (a POST)
        // is checked with a non-blocking peek: a close may still sit in the kernel. So is one
        // whose response had no body by rule (HEAD, 204, 304): a backend that sends one anyway
        // may have its bytes in the kernel, and the next request would read them as its
        // response. Otherwise only what libevent has already seen counts — no syscall on the hot
        // path: a connection going idle is retired by any byte or close that comes while it
        // waits, and a request that can be retried is, on a fresh connection, if this one turns
        // out closed (as one taking an idle connection is; the peek was one syscall in two of
        // an HTTP/2 stream's at 50 x 10, where most releases hand over). Bytes a backend sends
        // beyond a response with a length, after the read that ended it, are not looked for.
        let peek = state.handOverNeedsPeek(upstream.id, bodilessResponse: bodilessResponse)
        switch upstream.peerActivity(peek: peek) ?? .closed {
        case .data:
            upstream.close()
            return .discardedUnexpectedBytes
        case .closed:
            // The backend closed right after responding: reuse would race its closes.
            connections[upstream.id] = nil
            let slot = state.closedAtRelease(upstream.id, now: now)
            upstream.close()
            forgetLabelIfUnused(upstream.target.poolKey)
            perform(slot)
            return .closed
        case .quiet:
            break
        }
        switch state.released(upstream.id, now: now) {
        case .pool(_, let idleTimeout):
            upstream.isIdle = true
            upstream.setTimeouts(read: idleTimeout, write: nil)
            return .pooled
        case .handOver(_, let waiterID):
            guard let next = take(waiterID) else {
                // Unreachable while the queues agree; never leave a connection lent to no one.
                upstream.close()
                return .closed
            }
            next.waiter.pool(didProvide: upstream)
            return .handedOver
        case .replace(let old, let new, let waiterID):
            discard(old)
            perform(.create(new, for: waiterID))
            return .closed
        case .close(let id):
            discard(id)
            return .closed
        }
    }

    /// Bookkeeping when any connection closes (called by ``UpstreamConnection/close()``): frees
    /// a slot for a queued request. A connection the pool closed itself is already forgotten.
    func connectionClosed(_ upstream: UpstreamConnection) {
        guard connections[upstream.id] === upstream else { return }
        connections[upstream.id] = nil
        let slot = state.connectionClosed(upstream.id, now: PoolInstant.now)
        forgetLabelIfUnused(upstream.target.poolKey)
        perform(slot)
    }

    /// A connection finished connecting (for the `connecting` gauge, and the TLS counters).
    func connectionEstablished(_ upstream: UpstreamConnection) {
        state.connected(upstream.id)
        guard let connection = upstream.connection else { return }
        countTLSHandshake(connection, key: upstream.target.poolKey)
    }

    /// Counts `connection`'s TLS handshake (if it is TLS) for the backend of `key`.
    func countTLSHandshake(_ connection: any ByteStream, key: String) {
        guard connection.isTLS else { return }
        let label = labels[key] ?? key
        let series = tlsHandshakes.count < ProxyMetrics.maxUpstreamSeries || tlsHandshakes[label] != nil ? label : "other"
        tlsHandshakes[series, default: 0] += 1
        if connection.tlsSessionResumed { tlsResumed[series, default: 0] += 1 }
    }

    /// An idle connection's idle timeout expired.
    func idleTimedOut(_ upstream: UpstreamConnection) {
        if case .close(let id) = state.idleTimeoutFired(upstream.id, now: PoolInstant.now) {
            discard(id)
        } else {
            upstream.close()
        }
    }

    /// Applies reloaded settings: connections open from now on use them; a lower limit closes
    /// excess idle connections, a higher one serves queued requests.
    func update(limit: Int, connectTimeout: Duration, idleTimeout: Duration) {
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        http2.idleTimeout = idleTimeout
        for action in state.limitsChanged(limit: limit, idleTimeout: idleTimeout) {
            switch action {
            case .close(let id): discard(id)
            case .create(let id, let waiterID): perform(.create(id, for: waiterID))
            }
        }
    }

    /// Closes every idle connection and forgets every queued request (loop shutdown).
    func closeAll() {
        http2.closeAll()
        let actions = state.closeAll()
        queued = SlotMap()
        for id in actions.close { discard(id) }
    }

    /// Open connections by backend and state (`connecting`, `active` or `idle`), for the
    /// metrics gauge.
    func gauges() -> [UpstreamGaugeKey: Int] {
        var result: [UpstreamGaugeKey: Int] = [:]
        for (key, entry) in state.keys where entry.open > 0 {
            let label = labels[key] ?? key
            let active = entry.open - entry.idle.count - entry.connecting
            result[UpstreamGaugeKey(upstream: label, state: "idle"), default: 0] += entry.idle.count
            result[UpstreamGaugeKey(upstream: label, state: "active"), default: 0] += active
            if entry.connecting > 0 {
                result[UpstreamGaugeKey(upstream: label, state: "connecting"), default: 0] += entry.connecting
            }
        }
        return result
    }

    // MARK: - performing actions

    /// Takes an idle connection out of the pool for a request.
    private func lend(_ id: UpstreamPoolState.ConnectionID) -> UpstreamConnection {
        let upstream = connections[id]!
        upstream.isIdle = false
        // The session sets the exchange's timeouts when it sends.
        return upstream
    }

    /// Opens a new connection with the state machine's ID.
    private func open(_ id: UpstreamPoolState.ConnectionID, _ target: UpstreamTarget) -> UpstreamConnection {
        if labels[target.poolKey] == nil { labels[target.poolKey] = "\(target.host):\(target.port)" }
        let upstream = UpstreamConnection(id: id, target: target, pool: self, loop: loop)
        connections[id] = upstream
        upstream.open(timeout: connectTimeout)
        return upstream
    }

    /// Closes a connection the state machine has already forgotten.
    private func discard(_ id: UpstreamPoolState.ConnectionID) {
        guard let upstream = connections.removeValue(forID: id) else { return }
        upstream.close()
        forgetLabelIfUnused(upstream.target.poolKey)
    }

    /// Opens a connection for a queued waiter when a slot was freed.
    private func perform(_ slot: UpstreamPoolState.SlotAction) {
        guard case .create(let id, let waiterID) = slot else { return }
        guard let next = take(waiterID) else {
            // Unreachable while the queues agree; give the slot back rather than leak it.
            perform(state.connectionClosed(id, now: PoolInstant.now))
            return
        }
        next.waiter.pool(didProvide: open(id, next.target))
    }

    /// Removes a served waiter from the queue bookkeeping.
    private func take(_ waiterID: UpstreamPoolState.WaiterID) -> Queued? {
        queued.removeValue(forID: waiterID)
    }

    private func forgetLabelIfUnused(_ key: String) {
        if !state.knows(key) { labels[key] = nil }
    }
}
