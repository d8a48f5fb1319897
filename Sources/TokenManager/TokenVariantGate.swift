import EventLoop

/// Shared by the variants of one route: after a failure that is about the client or the token
/// server rather than one caller (a 5xx, a 429 with `Retry-After`, a network error, rejected
/// client credentials), no variant without a token fetches before the failure's backoff ends —
/// every new caller or scope set must not cost the token server another request meanwhile.
public final class TokenVariantGate: Sendable {
    private let closedUntil = Locked<ContinuousClock.Instant?>(nil)

    /// An open gate.
    public init() {}

    /// No fetch before `instant` (a later instant already set stays).
    public func close(until instant: ContinuousClock.Instant) {
        closedUntil.withLock { current in
            if current.map({ $0 < instant }) ?? true { current = instant }
        }
    }

    /// A fetch succeeded: the client and the server work.
    public func open() {
        closedUntil.withLock { $0 = nil }
    }

    /// How long fetches stay held back from `now`, or nil when they may start.
    public func remaining(at now: ContinuousClock.Instant) -> Duration? {
        closedUntil.withLock { until in
            guard let until, until > now else { return nil }
            return until - now
        }
    }
}
