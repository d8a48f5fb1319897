/// The fleet-wide single flight for one credential as a pure state machine: events in,
/// actions out, no I/O, every event carrying `now` (tests drive it with a fake store and clock).
///
/// A flight starts when the credential needs a token (``need(_:now:)``): read the shared entry;
/// adopt it if it serves the need; otherwise take the lease (`SET NX PX`) and, holding it, read
/// once more (a replica may have written in between) and fetch, then write the token and release
/// the lease. A replica that finds the lease taken waits, polling, until the entry serves it, the
/// lease frees (it takes it: the holder died or failed) or ``waitLimit`` passes. Any store
/// failure ends the flight with a fetch of its own (today's behaviour without a shared cache);
/// availability changes are reported once each.
public struct SharedTokenState: Sendable {
    /// Where a flight is.
    public enum Phase: Sendable, Equatable {
        /// No flight.
        case idle
        /// Reading the entry.
        case reading
        /// Asking for the lease.
        case leasing
        /// The lease is someone else's: waiting for the poll timer.
        case waiting
        /// Fetching from the token server.
        case fetching
    }

    /// The outcome of a read.
    public enum ReadResult: Sendable, Equatable {
        /// An entry that opened.
        case found(SharedTokenEntry)
        /// No entry.
        case missing
        /// An entry that did not open (wrong key, tampering, another version): a miss, never injected.
        case corrupt
        /// The store failed or timed out.
        case failed
    }

    /// The outcome of asking for the lease.
    public enum LeaseResult: Sendable, Equatable {
        /// This instance holds it now.
        case won
        /// Another instance holds it.
        case lost
        /// The store failed or timed out.
        case failed
    }

    /// How long a replica waits for another one's fetch before fetching itself.
    public let waitLimit: Duration
    /// How often a waiting replica reads the entry again.
    public let pollInterval: Duration
    /// The lease's expiry (a holder that dies frees it after this).
    public let leaseTTL: Duration
    /// An entry is due for refresh from this fraction of its lifetime on (``SharedTokenNeed/refresh``).
    public let dueFraction: Double
    /// Fetches only under the lease (a rotating refresh token: spent twice, it revokes itself):
    /// no fetch of one's own when the store fails or the wait runs out — the flight reads again
    /// later — and after a fetch the lease is released only once the entry is written
    /// (``entryWritten(ok:)``), so no other replica refreshes before the fleet has the new token.
    public let exclusive: Bool

    /// The phase.
    public private(set) var phase: Phase = .idle
    /// Whether the store answered the last operation.
    public private(set) var isAvailable = true
    /// Whether this instance holds the lease.
    public private(set) var holdsLease = false
    /// What the flight in progress needs.
    public private(set) var need: SharedTokenNeed?
    /// When the flight started waiting for another replica.
    public private(set) var waitingSince: ContinuousClock.Instant?
    /// Counters.
    public private(set) var counts = SharedTokenCounts()

    /// Creates an idle state.
    /// - Parameters:
    ///   - waitLimit: the longest wait for another replica's fetch (about half of `tokenWait`).
    ///   - pollInterval: how often a waiting replica reads again.
    ///   - leaseTTL: the lease's expiry (longer than a fetch may take).
    ///   - refreshAt: the credentials' refresh point; with `refreshJitter`, an entry counts as due
    ///     for refresh from `refreshAt - 2 × refreshJitter` of its lifetime.
    public init(waitLimit: Duration, pollInterval: Duration = .milliseconds(50), leaseTTL: Duration,
                refreshAt: Double = 0.8, refreshJitter: Double = 0.02, exclusive: Bool = false) {
        self.exclusive = exclusive
        self.waitLimit = waitLimit
        self.pollInterval = pollInterval
        self.leaseTTL = leaseTTL
        self.dueFraction = max(0.01, refreshAt - 2 * refreshJitter)
    }

    /// The credential needs a token; nothing if a flight is already under way.
    public mutating func need(_ need: SharedTokenNeed, now: ContinuousClock.Instant) -> [SharedTokenAction] {
        guard phase == .idle else { return [] }
        self.need = need
        waitingSince = nil
        phase = .reading
        return [.read]
    }

    /// A read finished. `wallNow` and `now` place the entry on this process's clock.
    public mutating func entryRead(_ result: ReadResult, now: ContinuousClock.Instant, wallNow: Double) -> [SharedTokenAction] {
        guard phase == .reading, let need else { return [] }
        if result == .failed { return exclusive ? readAgainLater(now: now) : fallBack() }
        var actions = markAvailable()
        var stale: SharedTokenEntry?
        switch result {
        case .found(let entry):
            if serves(entry, need: need, now: now, wallNow: wallNow) {
                counts.hits += 1
                actions.append(.adopt(entry))
                if holdsLease {
                    holdsLease = false
                    actions.append(.releaseLease)
                }
                finish()
                return actions
            }
            stale = entry
        case .corrupt:
            counts.corrupt += 1
        case .missing, .failed:
            break
        }
        counts.misses += 1
        if holdsLease {
            phase = .fetching
            return actions + [.fetch]
        }
        if !exclusive, let since = waitingSince, now - since >= waitLimit {
            counts.fallbacks += 1
            phase = .fetching
            return actions + [.fetch]
        }
        if case .rejected(let value) = need, let stale, stale.value == value, !stale.sealed.isEmpty {
            actions.append(.deleteIfEqual(stale.sealed))
        }
        phase = .leasing
        return actions + [.acquireLease(ttl: leaseTTL)]
    }

    /// The lease request finished.
    public mutating func leaseResult(_ result: LeaseResult, now: ContinuousClock.Instant) -> [SharedTokenAction] {
        guard phase == .leasing else { return [] }
        switch result {
        case .failed:
            return exclusive ? readAgainLater(now: now) : fallBack()
        case .won:
            holdsLease = true
            counts.leaseWon += 1
            if waitingSince != nil { counts.leaseExpired += 1 }
            phase = .reading
            return markAvailable() + [.read]
        case .lost:
            if waitingSince == nil {
                waitingSince = now
                counts.leaseWaited += 1
            }
            phase = .waiting
            let deadline = (waitingSince ?? now) + waitLimit
            // An exclusive flight has no deadline: it polls until the entry or the lease frees.
            return markAvailable() + [.schedulePoll(at: exclusive ? now + pollInterval : min(now + pollInterval, deadline))]
        }
    }

    /// The poll timer fired: read again.
    public mutating func pollFired(now: ContinuousClock.Instant) -> [SharedTokenAction] {
        guard phase == .waiting else { return [] }
        phase = .reading
        return [.read]
    }

    /// The fetch finished: `token` on success (written for the fleet), nil on failure (the lease
    /// is released so another replica may try; the credential's own backoff retries). An
    /// exclusive flight writes every success, usable access token or not: the entry carries the
    /// rotated refresh token, the one the server now expects from the fleet (readers never serve
    /// an unusable access token, ``serves(_:need:now:wallNow:)``).
    public mutating func fetchFinished(_ token: IssuedToken?, now: ContinuousClock.Instant) -> [SharedTokenAction] {
        guard phase == .fetching else { return [] }
        var actions: [SharedTokenAction] = []
        if let token, exclusive || token.isUsable(at: now) { actions.append(.write(token)) }
        if exclusive, token != nil {
            // Held until the entry is written (``entryWritten(ok:)``); never written, it expires.
        } else if holdsLease {
            holdsLease = false
            actions.append(.releaseLease)
        }
        finish()
        return actions
    }

    /// The entry write of a fetch finished: an exclusive flight's lease is released now that
    /// the fleet can read the new token (kept when the write failed: it expires, or the
    /// driver's next write releases it).
    public mutating func entryWritten(ok: Bool) -> [SharedTokenAction] {
        guard ok else {
            counts.errors += 1
            return markUnavailable()
        }
        guard exclusive, holdsLease, phase == .idle else { return markAvailable() }
        holdsLease = false
        return markAvailable() + [.releaseLease]
    }

    /// A write, delete or release finished.
    public mutating func storeFinished(ok: Bool) -> [SharedTokenAction] {
        if ok { return markAvailable() }
        counts.errors += 1
        return markUnavailable()
    }

    /// Whether `entry` serves `need` at `now`.
    public func serves(_ entry: SharedTokenEntry, need: SharedTokenNeed, now: ContinuousClock.Instant, wallNow: Double) -> Bool {
        let issued = entry.issued(now: now, wallNow: wallNow)
        guard issued.isUsable(at: now) else { return false }
        switch need {
        case .start:
            return true
        case .refresh:
            return now < issued.issuedAt + issued.lifetime * dueFraction
        case .rejected(let value):
            return entry.value != value
        }
    }

    /// The store failed under an exclusive flight: read again after a moment, never fetch alone.
    private mutating func readAgainLater(now: ContinuousClock.Instant) -> [SharedTokenAction] {
        counts.errors += 1
        if waitingSince == nil { waitingSince = now }
        phase = .waiting
        return markUnavailable() + [.schedulePoll(at: now + max(pollInterval, .milliseconds(500)))]
    }

    private mutating func fallBack() -> [SharedTokenAction] {
        counts.errors += 1
        counts.fallbacks += 1
        phase = .fetching
        return markUnavailable() + [.fetch]
    }

    private mutating func finish() {
        phase = .idle
        need = nil
        waitingSince = nil
    }

    private mutating func markAvailable() -> [SharedTokenAction] {
        guard !isAvailable else { return [] }
        isAvailable = true
        return [.availabilityChanged(true)]
    }

    private mutating func markUnavailable() -> [SharedTokenAction] {
        guard isAvailable else { return [] }
        isAvailable = false
        return [.availabilityChanged(false)]
    }
}
