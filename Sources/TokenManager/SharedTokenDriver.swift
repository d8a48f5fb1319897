import EventLoop
import Logging

/// Drives one credential's ``SharedTokenState``: performs its actions on the store, seals and
/// opens entries, arms the poll timer, and hands the credential either a token to adopt or the
/// order to fetch. Confined to the token loop.
final class SharedTokenDriver {
    private var state: SharedTokenState
    private let binding: SharedTokenCache.Binding
    private let clock: any TokenClock
    private let loop: EventLoop
    private let logger: Logger
    private let credential: String
    private var pollTimer: (any TokenScheduledTask)?
    private var loggedCorrupt = false
    private var stopped = false
    /// Entries sent to the store and not yet acknowledged, retries included (token loop).
    private var writesInFlight = 0
    /// A refresh token credential's file: its token travels in the sealed entry.
    private let refreshTokens: RefreshTokenFile?
    /// Adopt this token (no fetch).
    var adopt: (IssuedToken) -> Void = { _ in }
    /// Fetch from the token server and report ``fetchFinished(_:)``.
    var fetch: () -> Void = {}
    /// Called after every event (the credential republishes its status).
    var changed: () -> Void = {}

    /// With `refreshTokens` (a refresh token grant) the flight is exclusive
    /// (``SharedTokenState/exclusive``): a refresh token is spent once, so a replica fetches only
    /// under the lease, and adopts the refresh token of every entry it reads.
    init(binding: SharedTokenCache.Binding, settings: TokenRefreshSettings, clock: any TokenClock, loop: EventLoop,
         logger: Logger, credential: String, refreshTokens: RefreshTokenFile? = nil) {
        self.refreshTokens = refreshTokens
        self.binding = binding
        self.clock = clock
        self.loop = loop
        self.logger = logger
        self.credential = credential
        let leaseTTL = settings.fetchTimeout + .seconds(1)
        state = SharedTokenState(waitLimit: settings.tokenWait / 2, pollInterval: binding.cache.pollInterval,
                                 leaseTTL: leaseTTL, refreshAt: settings.refreshAt,
                                 refreshJitter: settings.refreshJitter, exclusive: refreshTokens != nil)
    }

    /// How long an entry carrying a rotated refresh token stays in the store after its access
    /// token expired (refresh tokens commonly live for days to months).
    static let refreshTokenRetention: Duration = .seconds(30 * 24 * 3600)

    /// Whether stopping now could leave the fleet without a rotation: an entry on its way to the
    /// store (or waiting to be written again), or the lease asked for (won, it is held until
    /// its TTL by a process that is gone).
    var writePending: Bool { writesInFlight > 0 || (refreshTokens != nil && state.phase == .leasing) }

    /// The status for the status page and metrics.
    var status: SharedCacheStatus {
        SharedCacheStatus(available: state.isAvailable, phase: "\(state.phase)", counts: state.counts)
    }

    /// The credential needs a token for `need`.
    func need(_ need: SharedTokenNeed) {
        perform(state.need(need, now: clock.now))
    }

    /// The fetch ordered by the driver finished.
    func fetchFinished(_ token: IssuedToken?) {
        perform(state.fetchFinished(token, now: clock.now))
    }

    /// Cancels the poll timer and ignores later completions (an entry on its way is still
    /// written, and ``writePending`` follows it: a drain waits for it).
    func stop() {
        stopped = true
        pollTimer?.cancel()
        pollTimer = nil
    }

    private func perform(_ actions: [SharedTokenAction]) {
        guard !stopped else { return }
        let store = binding.cache.store
        for action in actions {
            switch action {
            case .read:
                store.read(binding.entryKey) { [weak self] result in self?.readFinished(result) }
            case .deleteIfEqual(let sealed):
                store.deleteIfEqual(binding.entryKey, value: sealed) { [weak self] result in
                    guard let self else { return }
                    if case .success(true) = result {
                        logger.notice("rejected token removed from the shared cache", metadata: ["credential": .string(credential)])
                    }
                    storeFinished(result.map { _ in () })
                }
            case .acquireLease(let ttl):
                store.acquireLease(binding.leaseKey, owner: binding.cache.instanceId, ttl: ttl) { [weak self] result in
                    guard let self, !stopped else { return }
                    let outcome: SharedTokenState.LeaseResult
                    switch result {
                    case .success(true): outcome = .won
                    case .success(false): outcome = .lost
                    case .failure: outcome = .failed
                    }
                    perform(state.leaseResult(outcome, now: clock.now))
                }
            case .releaseLease:
                store.deleteIfEqual(binding.leaseKey, value: Array(binding.cache.instanceId.utf8)) { [weak self] result in
                    self?.storeFinished(result.map { _ in () })
                }
            case .write(let issued):
                let now = clock.now
                var entry = SharedTokenEntry(issued, now: now, wallNow: clock.wallClockSeconds)
                entry.refreshToken = refreshTokens?.held
                // A refresh token entry is written even when its access token is over: the
                // rotated refresh token must reach the fleet (its TTL is the retention, ``write``).
                let ttl = issued.usableUntil - now
                guard refreshTokens != nil || ttl > .milliseconds(1),
                      let sealed = binding.cache.sealer.seal(entry, cacheKey: binding.hash) else { continue }
                write(sealed, until: issued.usableUntil)
            case .adopt(let entry):
                // Its refresh token was taken as the entry was read (``readFinished(_:)``).
                let issued = entry.issued(now: clock.now, wallNow: clock.wallClockSeconds)
                logger.info("token adopted from the shared cache", metadata: [
                    "credential": .string(credential), "fingerprint": .string(issued.token.fingerprint),
                ])
                adopt(issued)
            case .fetch:
                fetch()
            case .schedulePoll(let at):
                pollTimer?.cancel()
                pollTimer = clock.schedule(on: loop, after: at - clock.now) { [weak self] in
                    guard let self, !stopped else { return }
                    pollTimer = nil
                    perform(state.pollFired(now: clock.now))
                }
            case .availabilityChanged(let available):
                if available {
                    logger.notice("shared token cache answers again: tokens are shared", metadata: ["credential": .string(credential)])
                } else {
                    logger.warning("shared token cache unavailable: fetching tokens for this process alone",
                                   metadata: ["credential": .string(credential)])
                }
            }
        }
        changed()
    }

    /// Takes the fleet's refresh token when it is newer than the one held; logs the write.
    private func adopt(_ refreshToken: String, issuedAtWall: Double, file: RefreshTokenFile) {
        switch file.adopt(refreshToken, issuedAtWall: issuedAtWall) {
        case .taken:
            logger.info("refresh token adopted from the shared cache; written to refreshTokenFile", metadata: ["credential": .string(credential)])
        case .takenNotWritten:
            logger.error("refresh token adopted from the shared cache, but refreshTokenFile could not be written; kept in memory",
                         metadata: ["credential": .string(credential), "file": .string(file.file.path)])
        case .kept:
            break
        }
    }

    /// Writes a sealed entry; a refresh token credential's entry is written again each second
    /// while the store fails and the token is usable (the fleet must learn the rotation).
    private func write(_ sealed: [UInt8], until: ContinuousClock.Instant) {
        writesInFlight += 1
        // The refresh token outlives its access token: a replica started after every other one
        // stopped (scaled to zero overnight) must still find the fleet's newest one, not refresh
        // with its file's spent token and revoke the family. Readers never serve the expired
        // access token (``SharedTokenState/serves``).
        let ttl = refreshTokens == nil ? until - clock.now : max(until - clock.now, Self.refreshTokenRetention)
        binding.cache.store.write(binding.entryKey, value: sealed, ttl: ttl) { [weak self] result in
            guard let self else { return }
            writesInFlight -= 1
            defer { changed() }
            guard !stopped else { return }
            if case .success = result {
                perform(state.entryWritten(ok: true))
                return
            }
            perform(state.entryWritten(ok: false))
            guard refreshTokens != nil else { return }
            let retryAt = clock.now + .seconds(1)
            guard retryAt < until else { return }
            writesInFlight += 1
            _ = clock.schedule(on: loop, after: .seconds(1)) { [weak self] in
                guard let self else { return }
                writesInFlight -= 1
                guard !stopped else { return changed() }
                write(sealed, until: until)
            }
        }
    }

    private func readFinished(_ result: Result<[UInt8]?, SharedStoreFailure>) {
        guard !stopped else { return }
        let read: SharedTokenState.ReadResult
        switch result {
        case .failure: read = .failed
        case .success(nil): read = .missing
        case .success(let bytes?):
            if let entry = binding.cache.sealer.open(bytes, cacheKey: binding.hash) {
                read = .found(entry)
                // The fleet's newest refresh token, also from an entry due for refresh: a
                // replica about to refresh must send that one, not the one it held.
                if let refreshToken = entry.refreshToken, let file = refreshTokens {
                    adopt(refreshToken, issuedAtWall: entry.issuedAtWall, file: file)
                }
            } else {
                read = .corrupt
                if !loggedCorrupt {
                    loggedCorrupt = true
                    logger.error("a shared cache entry does not open (another encryption key, tampering or another version): ignored",
                                 metadata: ["credential": .string(credential)])
                }
            }
        }
        perform(state.entryRead(read, now: clock.now, wallNow: clock.wallClockSeconds))
    }

    private func storeFinished(_ result: Result<Void, SharedStoreFailure>) {
        guard !stopped else { return }
        if case .success = result {
            perform(state.storeFinished(ok: true))
        } else {
            perform(state.storeFinished(ok: false))
        }
    }
}
