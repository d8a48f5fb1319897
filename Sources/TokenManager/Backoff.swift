/// Exponential backoff with full jitter: attempt `n` (0-based) waits a uniformly random time in
/// `0 ... min(cap, base × 2ⁿ)`.
public struct Backoff: Sendable, Equatable {
    /// The ceiling for the first attempt.
    public var base: Duration
    /// The largest ceiling.
    public var cap: Duration

    /// Creates a backoff (defaults: base 0.5 s, cap 60 s).
    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(60)) {
        self.base = base
        self.cap = cap
    }

    /// `min(cap, base × 2^attempt)`.
    public func ceiling(attempt: Int) -> Duration {
        let exponent = min(max(attempt, 0), 40)
        let scaled = Double(nanoseconds(base)) * Double(UInt64(1) << UInt64(exponent))
        return scaled >= Double(nanoseconds(cap)) ? cap : .nanoseconds(Int64(scaled))
    }

    /// A random delay in `0 ... ceiling(attempt:)`.
    public func delay<G: RandomNumberGenerator>(attempt: Int, using generator: inout G) -> Duration {
        let limit = nanoseconds(ceiling(attempt: attempt))
        guard limit > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...limit, using: &generator))
    }
}

/// Whole nanoseconds of a non-negative duration (saturating).
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    if seconds >= Int64.max / 1_000_000_000 { return Int64.max }
    if seconds < 0 { return 0 }
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}
