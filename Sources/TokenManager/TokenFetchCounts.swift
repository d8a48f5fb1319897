/// How many fetches a credential made, by result.
public struct TokenFetchCounts: Sendable, Equatable {
    /// Fetches started (with a shared cache: including those the cache answered, ``adopted``).
    public var started = 0
    /// Fetches answered by the fleet's shared cache with a token another replica fetched.
    public var adopted = 0
    /// Fetches that produced a token.
    public var succeeded = 0
    /// Fetches started because a backend answered 401 to the current token.
    public var unauthorizedRefetches = 0
    /// Failed fetches by ``TokenFetchError/counterName``.
    public var failed: [String: Int] = [:]

    /// Creates zero counts.
    public init() {}

    /// All failed fetches.
    public var failedTotal: Int { failed.values.reduce(0, +) }
}
