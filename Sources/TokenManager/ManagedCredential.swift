import EventLoop
import Logging
import Synchronization
import Tracing

/// A credential whose token is fetched from a token endpoint, cached, refreshed ahead of
/// expiry and refetched after a backend rejected it — the driver of a ``TokenRefreshState``.
///
/// `@unchecked Sendable` because the checker cannot see the confinement that makes it safe:
/// the state machine, the timer, the waiter table, the transport and the cache are touched only
/// on the token loop's thread (every entry point hops there with `EventLoop.execute`), and the
/// two snapshots read from other threads (the current token and the status) live behind a
/// `Locked` (pthread mutex). The generation of the newest token a request succeeded with is an
/// atomic that workers raise (``accepted(_:)``). Waiters live on their requests' loops and are
/// reached through ``LoopBound``.
public final class ManagedCredential: Credential, @unchecked Sendable {
    /// The credential's name (the same for every variant of one credential: metrics use it).
    public let name: String
    /// Which variant of its credential this is (`scope=read write`, `subject=sha256:…`), nil
    /// for the credential's own token. Shown on status pages; never a token.
    public let variant: String?
    /// Token request durations (token loop only; copied into the published status).
    private var fetchLatency = LatencyHistogram()
    /// Makes the request for every fetch (on the token loop): a fixed one, or one re-read or
    /// signed anew per fetch (a rotated `secretFile`, a new client assertion).
    public let source: TokenRequestSource
    /// The token request sent on the last fetch (nil before the first).
    public private(set) var request: TokenEndpointRequest?
    /// Timing parameters.
    public let settings: TokenRefreshSettings
    /// The token loop: fetches, timers and the state machine run on its thread.
    public let loop: EventLoop

    private let logger: Logger
    private let clock: any TokenClock
    private let cacheKey: TokenCacheKey
    private let published = Locked<AccessToken?>(nil)
    /// The OAuth error code of the last fetch when the server refused the request itself
    /// (one of ``refusalCodes``); cleared by a success.
    private let lastRefusal = Locked<String?>(nil)
    /// For a token fetched per request: the OAuth error codes that mean the server refused what
    /// the request asked for (answered 403 at once); nil for a credential's own token, whose
    /// failures are the sidecar's (503) whatever the code.
    private let refusalCodes: Set<String>?
    /// The route's gate, for a token fetched per request (``TokenVariantGate``).
    private let gate: TokenVariantGate?
    private let publishedStatus: Locked<TokenStatus>
    private let nextWaiterID = Locked<UInt64>(0)
    /// The newest ``AccessToken/generation`` a request succeeded with (any thread, relaxed).
    private let acceptedGeneration = Atomic<UInt64>(0)
    /// Whether a refresh token's rotation is under way: its refresh sent and not answered, or
    /// its answer not yet written to the fleet's shared cache (any thread reads it).
    private let rotating = Atomic<Bool>(false)
    /// A fetch was sent and its answer has not arrived (token loop).
    private var fetchInFlight = false

    // Confined to the token loop.
    private let transport: any TokenTransport
    private let cache: TokenCache?
    private var state: TokenRefreshState
    private var timer: (any TokenScheduledTask)?
    /// Checks every second whether the key the tokens are bound to changed (``TokenRequestSource/watchesBinding``).
    private var bindingWatch: (any TokenScheduledTask)?
    private var waiters: [UInt64: LoopBound<TokenWaiter>] = [:]
    /// Requests holding a 401 for a replay, with the token their backend rejected.
    private var rejectionWaiters: [UInt64: (waiter: LoopBound<TokenWaiter>, rejected: AccessToken)] = [:]
    private var stopped = false
    /// The fleet's shared cache for this credential (nil: fetch for this process alone).
    private let shared: SharedTokenDriver?
    /// Records each fetch attempt as a span (nil: tracing off).
    private let tracing: FetchTracing?
    /// Attempts of the fetch under way, counting from 1; a success starts again (token loop).
    private var attempt = 0
    /// Span ids of the fetch attempts (token loop).
    private var spanIDs = IDGenerator()

    /// Creates a credential; nothing happens until ``start()`` (or the first waiting request).
    ///
    /// - Parameters:
    ///   - transport: sends token requests on `loop`; default: an ``HTTPTokenTransport`` with
    ///     ``TokenRefreshSettings/fetchTimeout``.
    ///   - loop: the token loop (shared by every managed credential is fine).
    ///   - logger: receives one line per fetch (never the token, the secret or the response body).
    ///   - clock: time and timers; tests inject a manual one.
    ///   - cache: the token loop's shared LRU cache; a usable cached token is adopted at start.
    ///   - random: jitter source; tests inject a seeded one.
    public convenience init(name: String, request: TokenEndpointRequest, settings: TokenRefreshSettings = TokenRefreshSettings(),
                            transport: (any TokenTransport)? = nil, loop: EventLoop, logger: Logger,
                            clock: any TokenClock = SystemTokenClock(), cache: TokenCache? = nil,
                            random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
                            shared: SharedTokenCache.Binding? = nil) {
        self.init(name: name, source: .fixed(request), settings: settings, transport: transport, loop: loop,
                  logger: logger, clock: clock, cache: cache, random: random, shared: shared)
    }

    /// Creates a credential whose request comes from `source` before every fetch; the other
    /// parameters are those of ``init(name:request:settings:transport:loop:logger:clock:cache:random:shared:)``.
    /// With `shared`, every fetch first asks the fleet's shared cache (``SharedTokenState``).
    public init(name: String, source: TokenRequestSource, settings: TokenRefreshSettings = TokenRefreshSettings(),
                transport: (any TokenTransport)? = nil, loop: EventLoop, logger: Logger,
                clock: any TokenClock = SystemTokenClock(), cache: TokenCache? = nil,
                random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
                shared: SharedTokenCache.Binding? = nil, variant: String? = nil, refusalCodes: Set<String>? = nil,
                gate: TokenVariantGate? = nil, tracing: FetchTracing? = nil) {
        self.name = name
        self.tracing = tracing
        self.gate = gate
        self.variant = variant
        self.refusalCodes = refusalCodes
        self.source = source
        self.settings = settings
        self.loop = loop
        self.logger = logger
        self.clock = clock
        self.cacheKey = TokenCacheKey(credential: name, scope: source.scope, audience: source.audience, resource: source.resource)
        self.transport = transport ?? HTTPTokenTransport(loop: loop, timeout: settings.fetchTimeout)
        self.cache = cache
        self.state = TokenRefreshState(settings: settings, random: random)
        var initial = TokenStatus(name: name, takenAt: clock.now)
        initial.variant = variant
        self.publishedStatus = Locked(initial)
        self.shared = shared.map {
            SharedTokenDriver(binding: $0, settings: settings, clock: clock, loop: loop, logger: logger, credential: name,
                              refreshTokens: source.refreshTokens)
        }
        if let driver = self.shared {
            driver.adopt = { [unowned self] issued in adoptShared(issued) }
            driver.fetch = { [unowned self] in fetch() }
            driver.changed = { [unowned self] in
                publishStatus()
                updateRotating()
            }
        }
    }

    /// How long a request may wait for a token (``TokenRefreshSettings/tokenWait``).
    public var tokenWait: Duration { settings.tokenWait }

    /// Starts fetching (safe from any thread; hops to the token loop). Idempotent.
    public func start() {
        loop.execute { [self] in
            guard !stopped else { return }
            let cached = cache?.token(for: cacheKey)
            perform(state.start(now: clock.now, cached: cached))
            if source.watchesBinding && variant == nil { watchBinding() }
            if let cached, state.current == cached {
                logger.info("token reused from cache", metadata: [
                    "credential": .string(name), "fingerprint": .string(cached.token.fingerprint),
                ])
            }
        }
    }

    /// Stops refreshing (safe from any thread): cancels the timer, ignores a fetch in flight,
    /// answers waiting requests with nil and withdraws the token.
    public func stop() {
        loop.execute { [self] in
            guard !stopped else { return }
            stopped = true
            shared?.stop()
            timer?.cancel()
            timer = nil
            bindingWatch?.cancel()
            bindingWatch = nil
            resumeWaiters(with: nil)
            resumeRejectionWaiters(with: nil)
            published.withLock { $0 = nil }
        }
    }

    /// The current token if it is still usable at this instant. Lock-protected snapshot read;
    /// safe from any thread.
    public func currentToken() -> AccessToken? {
        guard let token = published.withLock({ $0 }) else { return nil }
        return token.isUsable(at: clock.now) ? token : nil
    }

    /// Whether stopping now could lose a rotated refresh token: a refresh sent and not answered,
    /// or answered and not yet written to the fleet's shared cache. A drain waits for it (any
    /// thread); a credential without a refresh token never rotates.
    public var rotationPending: Bool { rotating.load(ordering: .relaxed) }

    /// A snapshot for status pages (any thread). Never contains the token.
    public var status: TokenStatus {
        var status = publishedStatus.withLock { $0 }
        status.dpopNonceRetries = source.dpop?.nonces.retries
        return status
    }

    /// Completes at once with a usable token; otherwise registers a waiter that the next
    /// successful fetch resumes, or that completes with nil after `timeout`. Call on
    /// `callerLoop`'s thread; `completion` runs there, exactly once.
    public func waitForToken(on callerLoop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) {
        if let token = currentToken() {
            completion(token)
            return
        }
        guard timeout > .zero else {
            completion(nil)
            return
        }
        let id = nextWaiterID.withLock { $0 += 1; return $0 }
        let waiter = TokenWaiter(id: id, loop: callerLoop, timeout: timeout, completion: completion) { [self] in
            loop.execute { [self] in waiterTimedOut(id) }
        }
        let bound = LoopBound(waiter, on: callerLoop)
        loop.execute { [self] in register(bound, id: id) }
    }

    /// A backend answered 401 to `token` (see ``Credential/rejected(_:on:timeout:_:)``): the
    /// first 401 to the current token refetches at once — later than that only while the tokens
    /// refetched keep being rejected before any request succeeded with them, or after 4 such
    /// refetches within `unauthorizedRefetchInterval` — the token staying in use meanwhile;
    /// `completion` gets a different token to replay with, or nil.
    public func rejected(_ token: AccessToken, on callerLoop: EventLoop, timeout: Duration,
                         _ completion: ((AccessToken?) -> Void)?) {
        let id: UInt64 = completion == nil ? 0 : nextWaiterID.withLock { $0 += 1; return $0 }
        let bound: LoopBound<TokenWaiter>? = completion.map { completion in
            let waiter = TokenWaiter(id: id, loop: callerLoop, timeout: timeout, completion: completion) { [self] in
                loop.execute { [self] in rejectionWaiterTimedOut(id) }
            }
            return LoopBound(waiter, on: callerLoop)
        }
        loop.execute { [self] in
            guard !stopped else {
                bound?.run { $0.finish(nil) }
                return
            }
            let now = clock.now
            let (outcome, actions) = state.rejected(token, now: now, waiting: bound != nil)
            switch outcome {
            case .replay(let newer): bound?.run { $0.finish(newer) }
            case .passThrough: bound?.run { $0.finish(nil) }
            case .awaitRefetch: if let bound { rejectionWaiters[id] = (bound, token) }
            }
            if actions.contains(.fetch) {
                logger.notice("token refetch after the backend rejected it", metadata: [
                    "credential": .string(name), "fingerprint": .string(token.fingerprint),
                ])
            } else if actions.contains(.evict), let next = state.nextFetchAt {
                logger.notice("token refetch after the backend rejected it is delayed: recent tokens were rejected too", metadata: [
                    "credential": .string(name), "fingerprint": .string(token.fingerprint),
                    "in_ms": .string(FetchLog.milliseconds(next - now)),
                ])
            }
            if !actions.isEmpty { perform(actions) }
        }
    }

    /// A request succeeded (2xx) with `token` (any thread). On the hot path this is one relaxed
    /// atomic load and an integer compare; only the first success of each token generation
    /// sends a message to the token loop (``TokenRefreshState/accepted(_:)``).
    public func accepted(_ token: AccessToken) {
        let generation = token.generation
        var newest = acceptedGeneration.load(ordering: .relaxed)
        while newest < generation {
            let (exchanged, original) = acceptedGeneration.compareExchange(expected: newest, desired: generation,
                                                                           ordering: .relaxed)
            if exchanged {
                loop.execute { [self] in
                    guard !stopped else { return }
                    state.accepted(token)
                }
                return
            }
            newest = original
        }
    }

    /// The name in log lines: with the variant, `name[scope=read]`.
    private var logName: String { variant.map { "\(name)[\($0)]" } ?? name }

    /// A managed credential can fetch a different token after a rejection.
    public var refreshable: Bool { true }

    /// The OAuth error code when the token server refused this credential's last request
    /// itself (one of the `refusalCodes` it was made with), nil otherwise. Any thread.
    public func refusal() -> String? { lastRefusal.withLock { $0 } }

    // MARK: - On the token loop

    private func register(_ waiter: LoopBound<TokenWaiter>, id: UInt64) {
        if stopped {
            waiter.run { $0.finish(nil) }
            return
        }
        let (token, actions) = state.addWaiter(now: clock.now)
        if let token {
            waiter.run { $0.finish(token) }
            return
        }
        waiters[id] = waiter
        perform(actions)
    }

    private func waiterTimedOut(_ id: UInt64) {
        guard waiters.removeValue(forKey: id) != nil else { return }
        state.removeWaiter()
    }

    private func rejectionWaiterTimedOut(_ id: UInt64) {
        guard rejectionWaiters.removeValue(forKey: id) != nil else { return }
        state.removeRejectionWaiter()
    }

    /// Replays only with a token different from the one that was rejected.
    private func resumeRejectionWaiters(with token: AccessToken?) {
        let all = rejectionWaiters
        rejectionWaiters.removeAll()
        for (waiter, rejected) in all.values {
            let answer = token?.value == rejected.value ? nil : token
            waiter.run { $0.finish(answer) }
        }
    }

    private func resumeWaiters(with token: AccessToken?) {
        let all = waiters
        waiters.removeAll()
        for waiter in all.values { waiter.run { $0.finish(token) } }
    }

    /// A rotated key or certificate gets a token bound to the new one within a second, while
    /// the current token (which keeps its own) stays in use until it arrives.
    private func watchBinding() {
        bindingWatch = clock.schedule(on: loop, after: .seconds(1)) { [weak self] in
            guard let self, !stopped else { return }
            if let file = source.refreshTokens, file.changedOnDisk() {
                let actions = state.sourceReplaced(now: clock.now)
                if !actions.isEmpty {
                    logger.notice("refreshTokenFile changed on disk; fetching with the refresh token in it",
                                  metadata: ["credential": .string(logName)])
                }
                perform(actions)
            } else if source.bindingDiffers(from: state.current?.token.binding) {
                let actions = state.bindingChanged(now: clock.now)
                if !actions.isEmpty {
                    logger.info("the DPoP key or client certificate changed; fetching a token bound to the new one",
                                metadata: ["credential": .string(logName)])
                }
                perform(actions)
            }
            watchBinding()
        }
    }

    private func timerFired() {
        timer = nil
        guard !stopped else { return }
        perform(state.timerFired(now: clock.now))
    }

    private func perform(_ actions: [TokenRefreshAction]) {
        for action in actions {
            switch action {
            case .publish(let token):
                published.withLock { $0 = token }
            case .store(let issued):
                cache?.store(issued, for: cacheKey)
            case .evict:
                cache?.remove(cacheKey)
            case .resumeWaiters(let token):
                resumeWaiters(with: token)
            case .failWaiters:
                resumeWaiters(with: nil)
            case .resumeRejected(let token):
                resumeRejectionWaiters(with: token)
            case .schedule(let at):
                timer?.cancel()
                timer = clock.schedule(on: loop, after: at - clock.now) { [weak self] in self?.timerFired() }
            case .fetch:
                timer?.cancel()
                timer = nil
                if let shared {
                    shared.need(sharedNeed())
                } else {
                    fetch()
                }
            }
        }
        publishStatus()
    }

    /// Publishes ``rotationPending`` (token loop).
    private func updateRotating() {
        guard source.refreshTokens != nil else { return }
        rotating.store(fetchInFlight || shared?.writePending == true, ordering: .relaxed)
    }

    private func publishStatus() {
        let now = clock.now
        var snapshot = TokenStatus(name: name, state: state, now: now)
        snapshot.variant = variant
        snapshot.fetchLatency = fetchLatency
        snapshot.sharedCache = shared?.status
        publishedStatus.withLock { $0 = snapshot }
    }

    /// What the fleet's shared cache must provide for the fetch that is starting.
    private func sharedNeed() -> SharedTokenNeed {
        guard let current = state.current else { return .start }
        if state.currentRejected { return .rejected(current.token.value) }
        return current.isUsable(at: clock.now) ? .refresh : .start
    }

    /// The shared cache answered the fetch with another replica's token.
    private func adoptShared(_ issued: IssuedToken) {
        guard !stopped else { return }
        if let tracing {
            attempt += 1
            let span = tracing.newAttempt(ids: &spanIDs)
            tracing.record(span, credential: name, variant: variant, attempt: attempt, endpoint: nil, startNanos: Tracer.nowNanos(),
                           outcome: "shared", status: nil, error: nil, sharedCache: true)
            attempt = 0
        }
        perform(state.adopted(issued, now: clock.now))
    }

    private func fetch() {
        let startedAt = clock.now
        let span = tracing.map { _ in
            attempt += 1
            return FetchSpan(context: tracing.unsafelyUnwrapped.newAttempt(ids: &spanIDs), attempt: attempt, startNanos: Tracer.nowNanos())
        }
        let refreshTokens = source.refreshTokens
        let startedWall = clock.wallClockSeconds
        let logger = logger, logName = logName
        fetchInFlight = true
        updateRotating()
        do {
            request = try TokenRequestSender.send(source, via: transport) { [weak self] sent, result in
                // A rotated refresh token is written before anything else, whatever becomes of
                // the answer or of this credential (stopped by a reload or a drain meanwhile):
                // the server expects it from now on, and the access token is used only after.
                if let refreshTokens, case .success(let response) = result,
                   let rotated = TokenResponseParser.rotatedRefreshToken(response) {
                    let metadata: Logger.Metadata = ["credential": .string(logName), "file": .string(refreshTokens.file.path)]
                    if refreshTokens.rotate(to: rotated, issuedAtWall: startedWall) {
                        logger.info("refresh token rotated; written to refreshTokenFile", metadata: metadata)
                    } else {
                        logger.error("refreshTokenFile could not be written; the rotated refresh token is kept in memory only",
                                     metadata: metadata)
                    }
                }
                self?.request = sent
                self?.fetchCompleted(result, sent: sent, startedAt: startedAt, span: span)
            }
        } catch {
            // Nothing was sent: the key, certificate or assertion is unusable. The failure takes
            // the usual path (backoff, stale token until expiry), from the loop, not from here.
            loop.execute { [weak self] in self?.fetchFinished(.failure(error), startedAt: startedAt, sent: false, span: span) }
        }
    }

    /// One attempt's span, from its start to its outcome.
    private struct FetchSpan {
        let context: SpanContext
        let attempt: Int
        let startNanos: UInt64
    }

    private func fetchCompleted(_ result: Result<TokenHTTPResponse, TokenTransportError>, sent: TokenEndpointRequest,
                                startedAt: ContinuousClock.Instant, span: FetchSpan?) {
        let wallClock = clock.wallClockSeconds
        var outcome = result.mapError { TokenFetchError(.transport($0)) }.flatMap {
            TokenResponseParser.parse($0, defaultLifetime: settings.defaultLifetime, wallClock: wallClock, binding: sent.binding,
                                      field: sent.tokenField)
        }
        if case .success(let grant) = outcome, let notAfter = source.notAfter {
            // A token exchanged for a subject is never used after the subject expires.
            outcome = grant.limited(to: notAfter - wallClock)
        }
        if case .success(let grant) = outcome, sent.binding?.dpopKey != nil, grant.binding?.dpopKey == nil {
            logger.warning("the token server answered a DPoP request with a bearer token; it is used as a bearer token", metadata: [
                "credential": .string(logName), "fingerprint": .string(AccessToken(value: grant.value).fingerprint),
            ])
        }
        if let span, case .success(var grant) = outcome {
            grant.fetchSpan = span.context
            outcome = .success(grant)
        }
        let status: Int? = if case .success(let response) = result { response.status } else { nil }
        fetchFinished(outcome, startedAt: startedAt, sent: true, span: span, status: status)
    }

    private func fetchFinished(_ outcome: Result<TokenGrant, TokenFetchError>, startedAt: ContinuousClock.Instant, sent: Bool,
                               span: FetchSpan?, status: Int? = nil) {
        fetchInFlight = false
        defer { updateRotating() }
        guard !stopped else { return }
        if let span, let tracing {
            let failure: String? = if case .failure(let error) = outcome { error.counterName } else { nil }
            let endpoint = sent ? request?.endpoint : nil
            tracing.record(span.context, credential: name, variant: variant, attempt: span.attempt, endpoint: endpoint,
                           startNanos: span.startNanos, outcome: failure ?? "success", status: status, error: failure,
                           sharedCache: false)
            if failure == nil { attempt = 0 }
        }
        let now = clock.now
        if sent {
            let (seconds, attoseconds) = (now - startedAt).components
            fetchLatency.observe(Double(seconds) + Double(attoseconds) / 1e18)
        }
        let latency = FetchLog.milliseconds(now - startedAt)
        var refusal: String?
        if case .failure(let error) = outcome, case .oauthError(_, let code, _) = error.kind, refusalCodes?.contains(code) == true {
            refusal = code
        }
        lastRefusal.withLock { $0 = refusal }
        switch outcome {
        case .success(let grant):
            gate?.open()
            // Dated from the request, not from the need: the flight may have waited for the lease.
            let actions = state.fetchSucceeded(grant, now: now, sentAt: startedAt)
            FetchLog.success(logger, credential: logName, grant: grant, state: state, latency: latency, now: now)
            shared?.fetchFinished(state.current)
            perform(actions)
        case .failure(let failure):
            // A token server may quote the caller's token it refused: a per-request token's
            // error keeps its code, not its description.
            var error = refusalCodes == nil ? failure : failure.withoutDescription
            if source.refreshTokens != nil, case .oauthError(_, "invalid_grant", _) = error.kind {
                error.grantRefused = true
                logger.error("the refresh token was refused (invalid_grant: revoked, expired or already used); put a new one in refreshTokenFile",
                             metadata: ["credential": .string(logName), "file": .string(source.refreshTokens?.file.path ?? "")])
            }
            let actions = state.fetchFailed(error, now: now, answerWaiters: refusal != nil)
            if refusal == nil, let until = state.retryNotBefore ?? state.nextFetchAt {
                // At least a second: a first retry's full jitter may be next to nothing.
                gate?.close(until: max(until, now + .seconds(1)))
            }
            FetchLog.failure(logger, credential: logName, error: error, state: state, latency: latency, now: now)
            shared?.fetchFinished(nil)
            perform(actions)
        }
    }
}
