import EventLoop

/// A request waiting for a connection because its upstream is at `maxConnectionsPerUpstream`.
protocol UpstreamWaiter: AnyObject {
    /// A connection (new or reused) is now the waiter's.
    func pool(didProvide upstream: UpstreamConnection)
}

/// What ``UpstreamPool/acquire(_:waiter:checkStale:)`` produced.
enum PoolLease {
    /// A connection (reused or new) for the caller.
    case ready(UpstreamConnection)
    /// At the connection limit: the waiter is queued.
    case queued
    /// At the limit with a full queue.
    case overloaded
}

/// What happened to a released connection.
enum PoolReleaseOutcome: Equatable {
    case pooled, handedOver, closed, discardedUnexpectedBytes
}

/// Connections to backends on one worker loop: idle keep-alive connections per destination
/// (most recently used first — the warmest is the least likely to have been closed by the
/// backend), the per-upstream connection limit, and the queue of requests waiting under it.
final class UpstreamPool {
    private let loop: EventLoop
    private var limit: Int
    private var connectTimeout: Duration
    private var idleTimeout: Duration
    private var idle: [String: [UpstreamConnection]] = [:]
    private var open: [String: Int] = [:]
    /// `host:port` per pool key, for metrics.
    private var labels: [String: String] = [:]
    private var waiting: [String: [any UpstreamWaiter]] = [:]
    private let maxIdlePerKey: Int

    init(loop: EventLoop, limit: Int, connectTimeout: Duration, idleTimeout: Duration, maxIdlePerKey: Int = 128) {
        self.loop = loop
        self.limit = limit
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.maxIdlePerKey = maxIdlePerKey
    }

    /// An idle connection to `target`, a new one, or `nil` when the upstream is at its limit
    /// (then `waiter` is queued and later gets ``UpstreamWaiter/pool(didProvide:)``, unless it
    /// calls ``cancel(_:key:)`` first).
    ///
    /// `checkStale` marks a request that could not be retried if a reused connection turned out
    /// closed (a POST): it peeks at an idle connection before reuse (one extra syscall), and it
    /// does not reuse at all for a backend seen closing connections right after responses — the
    /// peek cannot win the race against a close that is still on its way.
    func acquire(_ target: UpstreamTarget, waiter: any UpstreamWaiter, checkStale: Bool) -> PoolLease {
        let avoidReuse = checkStale && closesAfterResponses(target.poolKey)
        if !avoidReuse, let reused = takeIdle(target.poolKey, checkStale: checkStale) { return .ready(reused) }
        if open[target.poolKey, default: 0] >= limit {
            waiting[target.poolKey, default: []].append(waiter)
            return .queued
        }
        return .ready(create(target))
    }

    /// Applies reloaded settings to connections opened or pooled from now on.
    func update(limit: Int, connectTimeout: Duration, idleTimeout: Duration) {
        self.limit = limit
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
    }

    /// Always a new connection (a retry after a stale pooled one failed).
    func acquireFresh(_ target: UpstreamTarget) -> UpstreamConnection {
        create(target)
    }

    private func create(_ target: UpstreamTarget) -> UpstreamConnection {
        if labels[target.poolKey] == nil { labels[target.poolKey] = "\(target.host):\(target.port)" }
        open[target.poolKey, default: 0] += 1
        let upstream = UpstreamConnection(target: target, pool: self, loop: loop)
        upstream.open(timeout: connectTimeout)
        return upstream
    }

    private func takeIdle(_ key: String, checkStale: Bool) -> UpstreamConnection? {
        // popLast through the subscript mutates the stored array in place (no copy per request).
        while let upstream = idle[key]?.popLast() {
            upstream.isIdle = false
            // A backend that closed its end while the connection sat idle must not get a request
            // that cannot be retried (idempotent ones are retried on a fresh connection instead).
            if upstream.connection == nil || (checkStale && upstream.connection!.peerHasClosedOrSentData) {
                noteIdleClose(upstream)
                upstream.close()
                continue
            }
            // The session sets the exchange's timeouts when it sends.
            return upstream
        }
        return nil
    }

    /// Forgets a queued waiter (it gave up).
    func cancel(_ waiter: any UpstreamWaiter, key: String) {
        waiting[key]?.removeAll { $0 === waiter }
    }

    /// Returns a connection whose last exchange completed cleanly.
    @discardableResult
    func release(_ upstream: UpstreamConnection) -> PoolReleaseOutcome {
        upstream.owner = nil
        let key = upstream.target.poolKey
        if upstream.connection?.peerHasClosedOrSentData ?? true {
            upstream.close()
            return .discardedUnexpectedBytes
        }
        if var queue = waiting[key], !queue.isEmpty {
            let waiter = queue.removeFirst()
            waiting[key] = queue.isEmpty ? nil : queue
            waiter.pool(didProvide: upstream)
            return .handedOver
        }
        guard idle[key, default: []].count < maxIdlePerKey else { upstream.close(); return .closed }
        upstream.isIdle = true
        upstream.idleSince = .now
        upstream.setTimeouts(read: idleTimeout, write: nil)
        idle[key, default: []].append(upstream)
        return .pooled
    }

    /// Bookkeeping when any connection closes: frees a slot for a queued request.
    func connectionClosed(_ upstream: UpstreamConnection) {
        let key = upstream.target.poolKey
        open[key, default: 1] -= 1
        if open[key] == 0 {
            open[key] = nil
            labels[key] = nil
        }
        if upstream.isIdle { noteIdleClose(upstream) }
        if upstream.isIdle, var list = idle[key] {
            list.removeAll { $0 === upstream }
            idle[key] = list.isEmpty ? nil : list
        }
        if var queue = waiting[key], !queue.isEmpty {
            let waiter = queue.removeFirst()
            waiting[key] = queue.isEmpty ? nil : queue
            waiter.pool(didProvide: create(upstream.target))
        }
    }

    /// When each backend was last seen closing a pooled connection soon after its response.
    private var eagerCloses: [String: ContinuousClock.Instant] = [:]
    /// An idle connection closed sooner than this after its last response marks its backend.
    private static let eagerCloseWindow: Duration = .seconds(1)
    /// How long that mark keeps non-retryable requests off reused connections.
    private static let eagerCloseMemory: Duration = .seconds(300)

    private func noteIdleClose(_ upstream: UpstreamConnection) {
        guard let since = upstream.idleSince, ContinuousClock.now - since < Self.eagerCloseWindow else { return }
        eagerCloses[upstream.target.poolKey] = .now
    }

    private func closesAfterResponses(_ key: String) -> Bool {
        guard let last = eagerCloses[key] else { return false }
        if ContinuousClock.now - last < Self.eagerCloseMemory { return true }
        eagerCloses[key] = nil
        return false
    }

    /// Closes every idle connection.
    func closeAll() {
        let all = idle.values.flatMap { $0 }
        idle.removeAll()
        waiting.removeAll()
        for upstream in all { upstream.close() }
    }

    /// Open connections by backend and state (`active` or `idle`), for the metrics gauge.
    func gauges() -> [UpstreamGaugeKey: Int] {
        var result: [UpstreamGaugeKey: Int] = [:]
        for (key, count) in open {
            let label = labels[key] ?? key
            let idleCount = idle[key]?.count ?? 0
            result[UpstreamGaugeKey(upstream: label, state: "idle"), default: 0] += idleCount
            result[UpstreamGaugeKey(upstream: label, state: "active"), default: 0] += count - idleCount
        }
        return result
    }

}
