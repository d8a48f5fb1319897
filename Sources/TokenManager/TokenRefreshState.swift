/// The token lifecycle of one credential as a pure state machine: events in, actions out.
///
/// No sockets, timers or clocks inside: every event carries `now`, and randomness comes from
/// an injected generator, so tests drive it with a fake clock. One fetch at a time (single
/// flight); refresh ahead of expiry while the current token keeps being used; backoff with full
/// jitter after failures, never giving up; the last good token is used until its usable-until
/// and never after. A backend's 401 to the current token refetches at once, once per token;
/// the refetch waits (1 s doubling) only while the tokens keep being rejected before any
/// request succeeded with them, or when 4 such refetches ran within the interval
/// (``rejected(_:now:waiting:)``, ``accepted(_:)``).
public struct TokenRefreshState {
    /// Timing parameters.
    public let settings: TokenRefreshSettings
    private var random: AnyRandomNumberGenerator

    /// The last good token (possibly no longer usable; see ``usableToken(at:)``).
    public private(set) var current: IssuedToken?
    /// Whether ``start(now:cached:)`` has run.
    public private(set) var isStarted = false
    /// Whether a fetch is in flight.
    public private(set) var isFetching = false
    /// When the in-flight fetch started.
    public private(set) var fetchStartedAt: ContinuousClock.Instant?
    /// When the next fetch (refresh or retry) is scheduled.
    public private(set) var nextFetchAt: ContinuousClock.Instant?
    /// Failures since the last success.
    public private(set) var consecutiveFailures = 0
    /// The most recent failure, cleared by a success.
    public private(set) var lastError: TokenFetchError?
    /// Requests waiting for a token.
    public private(set) var waiterCount = 0
    /// Requests holding a 401 until the refetch it caused (or joined) ends.
    public private(set) var rejectionWaiterCount = 0
    /// When the last refetch caused by a 401 started (or, delayed, is due to start).
    public var lastUnauthorizedRefetchAt: ContinuousClock.Instant? { recentUnauthorizedRefetches.last }
    /// When the last refetches caused by 401s started or are due, oldest first (at most
    /// ``TokenRefreshSettings/unauthorizedRefetchesPerInterval``).
    public private(set) var recentUnauthorizedRefetches: [ContinuousClock.Instant] = []
    /// Whether a request succeeded (2xx) with the current token (``accepted(_:)``).
    public private(set) var currentAccepted = false
    /// Whether a 401 to the current token was handled: its replacement is running or due, or
    /// failed (then the retry replaces it); further 401s to it start nothing.
    public private(set) var currentRejected = false
    /// Tokens rejected in a row with none that earned a 2xx in between: the next refetch caused
    /// by a 401 waits ``TokenRefreshSettings/unauthorizedRefetchDelay(streak:)`` of it.
    public private(set) var rejectionStreak = 0
    /// The ``AccessToken/generation`` of the last token made current.
    public private(set) var generation: UInt64 = 0
    /// Fetches by result.
    public private(set) var counts = TokenFetchCounts()
    /// On demand (``TokenRefreshSettings/refreshAhead`` false): no fetch starts before this,
    /// the end of the backoff after a failure.
    public private(set) var retryNotBefore: ContinuousClock.Instant?

    /// Creates an idle state.
    public init(settings: TokenRefreshSettings = TokenRefreshSettings(),
                random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.settings = settings
        self.random = AnyRandomNumberGenerator(random)
    }

    /// The token to hand out at `now`, if one is usable.
    public func usableToken(at now: ContinuousClock.Instant) -> AccessToken? {
        guard let current, current.isUsable(at: now) else { return nil }
        return current.token
    }

    /// The phase at `now`.
    public func phase(at now: ContinuousClock.Instant) -> TokenPhase {
        if !isStarted { return .idle }
        let usable = usableToken(at: now) != nil
        if isFetching { return usable ? .refreshing : .fetching }
        if usable { return consecutiveFailures > 0 ? .degraded : .valid }
        return .failing
    }

    /// Starts: adopts `cached` if it is still usable (and schedules its refresh), else fetches.
    public mutating func start(now: ContinuousClock.Instant, cached: IssuedToken? = nil) -> [TokenRefreshAction] {
        guard !isStarted else { return [] }
        isStarted = true
        if let cached, cached.isUsable(at: now) {
            let adopted = makeCurrent(cached.reissued(generation: generation + 1))
            guard settings.refreshAhead else { return [.publish(adopted.token)] }
            let at = refreshTime(for: adopted, now: now)
            nextFetchAt = at
            return [.publish(adopted.token), .schedule(at: at)]
        }
        return beginFetch(now: now)
    }

    /// The in-flight fetch produced `grant`; its lifetime counts from when the fetch started —
    /// from `sentAt` when given: the moment the request went to the token server, which may be
    /// long after the fetch began (a fleet's flight waits for another replica's lease first).
    public mutating func fetchSucceeded(_ grant: TokenGrant, now: ContinuousClock.Instant,
                                        sentAt: ContinuousClock.Instant? = nil) -> [TokenRefreshAction] {
        let issuedAt = sentAt ?? fetchStartedAt ?? now
        counts.succeeded += 1
        return finishFetch(IssuedToken(value: grant.value, issuedAt: issuedAt, lifetime: grant.lifetime,
                                       generation: generation + 1, binding: grant.binding, fetchSpan: grant.fetchSpan), now: now)
    }

    /// The fetch in flight was answered by the fleet's shared cache with `token` (another
    /// replica fetched it): the same as a success, with the token's own timeline.
    public mutating func adopted(_ token: IssuedToken, now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        guard isFetching else { return [] }
        counts.adopted += 1
        return finishFetch(token.reissued(generation: generation + 1), now: now)
    }

    private mutating func finishFetch(_ fetched: IssuedToken, now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        isFetching = false
        fetchStartedAt = nil
        consecutiveFailures = 0
        lastError = nil
        let issued = makeCurrent(fetched)
        var actions: [TokenRefreshAction] = [.publish(issued.isUsable(at: now) ? issued.token : nil), .store(issued)]
        if waiterCount > 0, issued.isUsable(at: now) {
            actions.append(.resumeWaiters(issued.token))
            waiterCount = 0
        }
        if rejectionWaiterCount > 0 {
            actions.append(.resumeRejected(issued.isUsable(at: now) ? issued.token : nil))
            rejectionWaiterCount = 0
        }
        retryNotBefore = nil
        guard settings.refreshAhead else {
            nextFetchAt = nil
            // Usable for no time at all: nobody waits for a token that is already over.
            actions += answerWaitersNow()
            return actions
        }
        let at = refreshTime(for: issued, now: now)
        nextFetchAt = at
        actions.append(.schedule(at: at))
        return actions
    }

    /// The in-flight fetch failed: schedule a retry (``retryDelay(after:)``). The current token
    /// stays in use until its usable-until; waiters keep waiting.
    ///
    /// `answerWaiters`: the server refused what this credential asks for (a caller's subject, a
    /// scope set): waiting requests are answered now (``TokenRefreshAction/failWaiters``) rather
    /// than held for a retry that would be refused the same way.
    public mutating func fetchFailed(_ error: TokenFetchError, now: ContinuousClock.Instant,
                                     answerWaiters: Bool = false) -> [TokenRefreshAction] {
        isFetching = false
        fetchStartedAt = nil
        lastError = error
        counts.failed[error.counterName, default: 0] += 1
        let delay = retryDelay(after: error)
        consecutiveFailures += 1
        let at = now + delay
        var actions: [TokenRefreshAction] = []
        if let current, !current.isUsable(at: now) { actions.append(.publish(nil)) }
        if rejectionWaiterCount > 0 {
            actions.append(.resumeRejected(nil))
            rejectionWaiterCount = 0
        }
        guard settings.refreshAhead else {
            // On demand: the requests waiting now get their answer now; a later one retries.
            nextFetchAt = nil
            retryNotBefore = at
            if currentRejected, current != nil {
                // The backend refused the current token and its replacement failed: nothing
                // would ever replace it (no retry for nobody), so it is withdrawn; the next
                // request after the backoff fetches anew.
                current = nil
                actions.append(.publish(nil))
            }
            return actions + answerWaitersNow()
        }
        nextFetchAt = at
        if answerWaiters, usableToken(at: now) == nil { actions += answerWaitersNow() }
        actions.append(.schedule(at: at))
        return actions
    }

    /// The delay before the next attempt after `error`: `Retry-After` when given (capped at
    /// ``TokenRefreshSettings/maxRetryAfter``); the backoff cap when the credentials were
    /// rejected; otherwise full-jitter exponential backoff. Uses ``consecutiveFailures`` as the
    /// attempt number.
    public mutating func retryDelay(after error: TokenFetchError) -> Duration {
        if let retryAfter = error.retryAfter { return min(retryAfter, settings.maxRetryAfter) }
        if error.isCredentialsRejected { return settings.backoff.cap }
        return settings.backoff.delay(attempt: consecutiveFailures, using: &random)
    }

    /// The timer armed by the last ``TokenRefreshAction/schedule(at:)`` fired.
    public mutating func timerFired(now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        guard isStarted, !isFetching, nextFetchAt != nil else { return [] }
        var actions: [TokenRefreshAction] = []
        if let current, !current.isUsable(at: now) { actions.append(.publish(nil)) }
        return actions + beginFetch(now: now)
    }

    /// What a fetch is made from was replaced by someone (a refresh token file an operator
    /// rewrote after a revocation): fetch now, whatever the backoff of earlier failures — they
    /// were failures of what is gone. Nothing happens before start or during a fetch.
    public mutating func sourceReplaced(now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        guard isStarted, !isFetching else { return [] }
        return beginFetch(now: now)
    }

    /// The key the current token is bound to was replaced (a rotated DPoP key file): a token
    /// bound to the new key is fetched now, while the current one (presented with its own key)
    /// stays in use until it arrives. Nothing happens before the first token or during a fetch
    /// (that fetch already uses the new key), nor while failed fetches back off (a new
    /// certificate the server does not trust yet is retried on the backoff schedule, not on
    /// every look at the files).
    public mutating func bindingChanged(now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        guard isStarted, !isFetching, current != nil else { return [] }
        if consecutiveFailures > 0, let next = nextFetchAt, now < next { return [] }
        return beginFetch(now: now)
    }

    /// The backend rejected `token` (HTTP 401); `waiting`: the reporter waits for the outcome
    /// (a request holding its 401 for a replay).
    ///
    /// A different usable token is current: replay with it. A fetch is in flight: wait for it.
    /// The first 401 to the current token: refetch, at once (waiting for it) unless tokens keep
    /// being rejected before any request succeeded with them — then after
    /// ``TokenRefreshSettings/unauthorizedRefetchDelay(streak:)`` — or the last
    /// ``TokenRefreshSettings/unauthorizedRefetchesPerInterval`` such refetches fell within
    /// ``TokenRefreshSettings/unauthorizedRefetchInterval`` (a delayed refetch passes the 401
    /// on). The rejected token stays in use meanwhile (nobody waits for a token because of a 401).
    /// Otherwise (a token already handled, or not current) the 401 is passed on.
    public mutating func rejected(_ token: AccessToken, now: ContinuousClock.Instant,
                                  waiting: Bool) -> (outcome: RejectionOutcome, actions: [TokenRefreshAction]) {
        if let usable = usableToken(at: now), usable.value != token.value { return (.replay(usable), []) }
        if isFetching {
            if waiting { rejectionWaiterCount += 1 }
            return (.awaitRefetch, [])
        }
        guard let current, current.token.value == token.value, !currentRejected else { return (.passThrough, []) }
        currentRejected = true
        counts.unauthorizedRefetches += 1
        let at = unauthorizedRefetchTime(now: now)
        guard at > now else {
            if waiting { rejectionWaiterCount += 1 }
            return (.awaitRefetch, [.evict] + beginFetch(now: now))
        }
        // An earlier refresh or retry stays: it replaces the token sooner.
        if let next = nextFetchAt, next <= at { return (.passThrough, [.evict]) }
        nextFetchAt = at
        return (.passThrough, [.evict, .schedule(at: at)])
    }

    /// A request succeeded (2xx) with `token`. If it is the current token (same generation), a
    /// later 401 to it is a revocation: refetched at once, ending a streak of rejected tokens
    /// (within ``TokenRefreshSettings/unauthorizedRefetchesPerInterval``: a backend that rejects
    /// every token beside one that accepts every token must not cause a storm either).
    public mutating func accepted(_ token: AccessToken) {
        guard let current, current.token.generation == token.generation, current.token.value == token.value else { return }
        currentAccepted = true
    }

    /// A request waiting after ``rejected(_:now:waiting:)`` gave up (timed out).
    public mutating func removeRejectionWaiter() {
        if rejectionWaiterCount > 0 { rejectionWaiterCount -= 1 }
    }

    /// A request found no token and waits. Returns a token if one is usable after all (the
    /// waiter is then not registered); starts the credential if it was idle.
    ///
    /// On demand (``TokenRefreshSettings/refreshAhead`` false) a started credential without a
    /// fetch in flight or due fetches now, or — within the backoff after a failure — answers
    /// the waiter at once (``TokenRefreshAction/failWaiters``).
    public mutating func addWaiter(now: ContinuousClock.Instant) -> (token: AccessToken?, actions: [TokenRefreshAction]) {
        if let token = usableToken(at: now) { return (token, []) }
        waiterCount += 1
        guard isStarted else { return (nil, start(now: now)) }
        guard !settings.refreshAhead, !isFetching, nextFetchAt == nil else { return (nil, []) }
        if let notBefore = retryNotBefore, now < notBefore {
            waiterCount = 0
            return (nil, [.failWaiters])
        }
        return (nil, beginFetch(now: now))
    }

    /// A registered waiter gave up (timed out) before a token arrived.
    public mutating func removeWaiter() {
        if waiterCount > 0 { waiterCount -= 1 }
    }

    /// When the refetch for the first 401 to the current token starts: after the streak's wait
    /// (a token that earned a 2xx ends the streak first), and no sooner than
    /// ``TokenRefreshSettings/unauthorizedRefetchInterval`` after the oldest of the last
    /// ``TokenRefreshSettings/unauthorizedRefetchesPerInterval`` such refetches. Counts the token
    /// into the streak and the refetch into the recent ones.
    private mutating func unauthorizedRefetchTime(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        if currentAccepted { rejectionStreak = 0 }
        var at = now + settings.unauthorizedRefetchDelay(streak: rejectionStreak)
        rejectionStreak = min(rejectionStreak + 1, 64)
        let budget = TokenRefreshSettings.unauthorizedRefetchesPerInterval
        if recentUnauthorizedRefetches.count >= budget {
            at = max(at, recentUnauthorizedRefetches[recentUnauthorizedRefetches.count - budget] + settings.unauthorizedRefetchInterval)
        }
        recentUnauthorizedRefetches.append(at)
        if recentUnauthorizedRefetches.count > budget { recentUnauthorizedRefetches.removeFirst() }
        return at
    }

    /// Makes `issued` the current token: a new generation, neither accepted nor rejected yet.
    private mutating func makeCurrent(_ issued: IssuedToken) -> IssuedToken {
        generation = issued.token.generation
        current = issued
        currentAccepted = false
        currentRejected = false
        return issued
    }

    private mutating func beginFetch(now: ContinuousClock.Instant) -> [TokenRefreshAction] {
        isFetching = true
        fetchStartedAt = now
        nextFetchAt = nil
        counts.started += 1
        return [.fetch]
    }

    /// ``TokenRefreshAction/failWaiters`` when requests wait, which then wait no more.
    private mutating func answerWaitersNow() -> [TokenRefreshAction] {
        guard waiterCount > 0 else { return [] }
        waiterCount = 0
        return [.failWaiters]
    }

    /// `issuedAt + refreshAt × lifetime ± jitter`, never after usable-until nor before `now`.
    private mutating func refreshTime(for issued: IssuedToken, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let lifetime = issued.lifetime
        var at = issued.issuedAt + lifetime * settings.refreshAt
        let spread = nanoseconds(lifetime * settings.refreshJitter)
        if spread > 0 { at += .nanoseconds(Int64.random(in: -spread...spread, using: &random)) }
        return max(min(at, issued.usableUntil), now)
    }
}
