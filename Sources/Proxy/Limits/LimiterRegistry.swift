import Config
import EventLoop
import Glibc
import Synchronization
import TokenManager

/// Every limiter of the process, by scope, kept across reloads: a reload that leaves a route's
/// or a credential's `limits:` as they were keeps what was spent (a budget does not start over
/// because another route changed); changed limits start afresh. With a fleet's shared cache
/// (``share(through:on:)``), every budget and rate is shared through its store.
public final class LimiterRegistry: Sendable {
    private struct State {
        var limiters: [String: RequestLimiter] = [:]
        var syncs: LimitSyncs?
    }

    private let state = Mutex(State())

    /// An empty registry.
    public init() {}

    /// Shares every budget and rate, present and future, with the fleet through `cache`'s store, whose
    /// operations run on `loop` (the token loop). Once.
    public func share(through cache: SharedTokenCache, on loop: EventLoop) {
        let syncs = LimitSyncs(cache: cache, loop: loop)
        let current = state.withLock { state -> [RequestLimiter] in
            guard state.syncs == nil else { return [] }
            state.syncs = syncs
            return Array(state.limiters.values)
        }
        loop.execute { for limiter in current { syncs.start(limiter) } }
    }

    /// The limiter of `scope` enforcing `config`: the existing one when its limits are the same.
    func limiter(_ scope: String, _ config: LimitsConfig) -> RequestLimiter {
        let (limiter, syncs) = state.withLock { state -> (RequestLimiter, LimitSyncs?) in
            if let existing = state.limiters[scope], existing.config == config { return (existing, nil) }
            let made = RequestLimiter(scope: scope, config: config, now: Timer.monotonicNow())
            state.limiters[scope] = made
            return (made, state.syncs)
        }
        if let syncs { syncs.loop.execute { syncs.start(limiter) } }
        return limiter
    }

    /// Forgets the limiters of scopes not in `scopes` (after a reload removed them).
    func keep(only scopes: Set<String>) {
        let syncs = state.withLock { state -> LimitSyncs? in
            state.limiters = state.limiters.filter { scopes.contains($0.key) }
            return state.syncs
        }
        if let syncs { syncs.loop.execute { syncs.keep(only: scopes) } }
    }

    /// What is left of every limit, sorted by scope.
    public func statuses() -> [LimitStatus] {
        let all = state.withLock { Array($0.limiters.values) }
        let now = Timer.monotonicNow()
        let wall = time(nil)
        return all.map { $0.status(now: now, wall: wall) }.sorted { $0.scope < $1.scope }
    }

    /// Stops sharing (before the token loop stops).
    public func stopSharing() {
        guard let syncs = state.withLock({ $0.syncs }) else { return }
        syncs.loop.execute { syncs.keep(only: []) }
    }
}

/// The ``SharedLimitSync`` of every shared limiter, by scope. `@unchecked Sendable`: created
/// anywhere, then used only on its loop (every method but the initializer asserts it).
private final class LimitSyncs: @unchecked Sendable {
    let cache: SharedTokenCache
    let loop: EventLoop
    private var syncs: [String: SharedLimitSync] = [:]

    init(cache: SharedTokenCache, loop: EventLoop) {
        self.cache = cache
        self.loop = loop
    }

    /// Shares `limiter`'s budget and rate (replacing the sync of a limiter its scope had before).
    func start(_ limiter: RequestLimiter) {
        loop.assertConfined()
        guard limiter.config.budget != nil || limiter.config.rate != nil else { return }
        syncs[limiter.scope]?.stop()
        let sync = SharedLimitSync(limiter: limiter, store: cache.store, keyPrefix: cache.keyPrefix, loop: loop)
        syncs[limiter.scope] = sync
        sync.start()
    }

    /// Stops the syncs of scopes not in `scopes`.
    func keep(only scopes: Set<String>) {
        loop.assertConfined()
        for (scope, sync) in syncs where !scopes.contains(scope) {
            sync.stop()
            syncs[scope] = nil
        }
    }
}
