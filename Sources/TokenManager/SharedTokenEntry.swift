/// A token as the shared cache holds it: the value and its timeline in wall-clock time (replicas
/// share no monotonic clock), plus the exact sealed bytes it was read as (compared when the
/// fleet marks it rejected).
public struct SharedTokenEntry: Sendable, Equatable {
    /// The token. Never log it.
    public let value: String
    /// When the fetch that produced it started, in seconds since 1970.
    public let issuedAtWall: Double
    /// The lifetime the token server gave.
    public let lifetime: Duration
    /// The sealed value as stored (empty for an entry not read from the store).
    public let sealed: [UInt8]
    /// The refresh token that came with it (a refresh token grant), which replicas adopting the
    /// entry take too. Never log it.
    public var refreshToken: String?

    /// Creates an entry.
    public init(value: String, issuedAtWall: Double, lifetime: Duration, sealed: [UInt8] = [], refreshToken: String? = nil) {
        self.refreshToken = refreshToken
        self.value = value
        self.issuedAtWall = issuedAtWall
        self.lifetime = lifetime
        self.sealed = sealed
    }

    /// The entry on this process's monotonic clock, given `now` and the wall clock at `now`.
    public func issued(now: ContinuousClock.Instant, wallNow: Double, generation: UInt64 = 0) -> IssuedToken {
        let age = Duration.milliseconds(Int64(((wallNow - issuedAtWall) * 1000).rounded()))
        return IssuedToken(value: value, issuedAt: now - age, lifetime: lifetime, generation: generation)
    }

    /// The entry for a token this process fetched.
    public init(_ issued: IssuedToken, now: ContinuousClock.Instant, wallNow: Double) {
        let age = now - issued.issuedAt
        let (seconds, attoseconds) = age.components
        self.init(value: issued.token.value, issuedAtWall: wallNow - (Double(seconds) + Double(attoseconds) / 1e18),
                  lifetime: issued.lifetime)
    }
}
