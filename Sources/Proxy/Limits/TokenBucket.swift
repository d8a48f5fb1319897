/// A token bucket (`limits.rate`): `burst` tokens at start, refilled at `perSecond`; each
/// admitted request takes one. Shared by a fleet, the bucket is the store's: each answer sets
/// the tokens here to the fleet's level less what was taken here since the send
/// (``unsynced``), and between answers it refills here at the whole rate — so replicas may
/// together take more than there was for a round trip, which the store counts as a debt the
/// next answers make every replica wait out: over time the fleet is held to the rate. Alone,
/// it is the bucket. A value type: ``RequestLimiter`` holds it under its lock.
struct TokenBucket: Equatable {
    /// Tokens added per second.
    let perSecond: Double
    /// The bucket's size.
    let burst: Double
    /// Tokens in the bucket at ``updatedAt``.
    private(set) var tokens: Double
    /// When ``tokens`` was last brought up to date (monotonic nanoseconds).
    private(set) var updatedAt: UInt64
    /// Taken here and not sent to the fleet's store yet.
    private(set) var unsynced = 0

    /// A full bucket at `now`.
    init(perSecond: Double, burst: Int, now: UInt64) {
        self.perSecond = perSecond
        self.burst = Double(burst)
        tokens = Double(burst)
        updatedAt = now
    }

    /// The tokens there are at `now` (never more than ``burst``).
    func available(at now: UInt64) -> Double {
        guard now > updatedAt else { return tokens }
        return min(burst, tokens + Double(now - updatedAt) / 1e9 * perSecond)
    }

    /// Takes one token at `now`: nil when there was one, otherwise the whole seconds until
    /// there is one (at least 1: `Retry-After` counts whole seconds).
    mutating func take(at now: UInt64) -> Int? {
        tokens = available(at: now)
        updatedAt = max(updatedAt, now)
        if tokens >= 1 {
            tokens -= 1
            unsynced += 1
            return nil
        }
        return max(1, Int(((1 - tokens) / perSecond).rounded(.up)))
    }

    /// Gives back a token taken at `now` (the request was refused by another limit).
    mutating func refund() {
        tokens = min(burst, tokens + 1)
        if unsynced > 0 { unsynced -= 1 }
    }

    /// What to send to the fleet's store: the tokens taken since the last send.
    mutating func send() -> Int {
        defer { unsynced = 0 }
        return unsynced
    }

    /// The store answered a send with the fleet's level `fleet` (at about `now`): the tokens
    /// here become it, less what was taken here meanwhile.
    mutating func answered(fleet: Double, at now: UInt64) {
        tokens = min(burst, fleet - Double(unsynced))
        updatedAt = max(updatedAt, now)
    }
}
