import TokenManager

/// Drives a ``TokenRefreshState`` in fake time the way `ManagedCredential` does: one timer
/// (each `schedule` replaces it, a `fetch` cancels it) and one fetch in flight, which succeeds
/// after `roundTrip` with `tok-1`, `tok-2`, ….
struct RefreshSimulation {
    /// The state under test.
    var state: TokenRefreshState
    /// Fake now.
    private(set) var now: ContinuousClock.Instant
    /// How long each fetch takes.
    let roundTrip: Duration
    /// The lifetime of every token fetched.
    let lifetime: Duration
    /// When each fetch started.
    private(set) var fetchStarts: [ContinuousClock.Instant] = []
    private var timerAt: ContinuousClock.Instant?
    private var fetchDoneAt: ContinuousClock.Instant?

    init(state: TokenRefreshState, now: ContinuousClock.Instant, roundTrip: Duration = .milliseconds(50),
         lifetime: Duration = .seconds(3600)) {
        self.state = state
        self.now = now
        self.roundTrip = roundTrip
        self.lifetime = lifetime
    }

    /// Starts the state.
    mutating func start() { apply(state.start(now: now)) }

    /// Carries out the actions the driver acts on (timer and fetch).
    mutating func apply(_ actions: [TokenRefreshAction]) {
        for action in actions {
            switch action {
            case .schedule(let at): timerAt = at
            case .fetch:
                timerAt = nil
                fetchStarts.append(now)
                fetchDoneAt = now + roundTrip
            default: break
            }
        }
    }

    /// Advances to `time`, completing the fetch and firing the timer when due, in time order.
    mutating func advance(to time: ContinuousClock.Instant) {
        while let next = [fetchDoneAt, timerAt].compactMap({ $0 }).min(), next <= time {
            now = next
            if fetchDoneAt == next {
                fetchDoneAt = nil
                let grant = TokenGrant(value: "tok-\(state.counts.succeeded + 1)", lifetime: lifetime, lifetimeSource: .expiresIn)
                apply(state.fetchSucceeded(grant, now: now))
            } else {
                timerAt = nil
                apply(state.timerFired(now: now))
            }
        }
        now = time
    }

    /// Advances by `duration`.
    mutating func advance(by duration: Duration) { advance(to: now + duration) }

    /// A request with the usable token got a 401; nil when no token is usable.
    @discardableResult
    mutating func rejectCurrent(waiting: Bool = true) -> (outcome: RejectionOutcome, actions: [TokenRefreshAction])? {
        guard let token = state.usableToken(at: now) else { return nil }
        let result = state.rejected(token, now: now, waiting: waiting)
        apply(result.actions)
        return result
    }

    /// A request with the usable token got a 2xx.
    mutating func acceptCurrent() {
        if let token = state.usableToken(at: now) { state.accepted(token) }
    }
}
