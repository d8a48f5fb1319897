/// When and how patiently a fetched token is obtained and renewed
/// (`refreshAt`, `defaultLifetime`, `tokenWait`, `unauthorizedRefetchInterval` of `mca` and
/// `oauth2` credentials).
public struct TokenFetchSettings: Sendable, Equatable {
    /// Fraction of a token's lifetime after which it is renewed, 0.01...0.99
    /// (written as a percentage, `refreshAt: 80%`; default 0.8).
    public var refreshAt: Double
    /// Lifetime assumed when the token response gives no `expires_in` (default 5 minutes, > 0).
    public var defaultLifetime: Duration
    /// How long a request may wait for a token being fetched before it fails (default 5 seconds, >= 0).
    public var tokenWait: Duration
    /// At most one refetch caused by upstream 401s per this interval (default 10 seconds, > 0).
    public var unauthorizedRefetchInterval: Duration

    /// Creates settings; every parameter defaults to the loader's default.
    public init(refreshAt: Double = 0.8, defaultLifetime: Duration = .seconds(300), tokenWait: Duration = .seconds(5),
                unauthorizedRefetchInterval: Duration = .seconds(10)) {
        self.refreshAt = refreshAt
        self.defaultLifetime = defaultLifetime
        self.tokenWait = tokenWait
        self.unauthorizedRefetchInterval = unauthorizedRefetchInterval
    }

    /// Renew at 80%, assume 5 minutes, wait up to 5 seconds, one 401 refetch per 10 seconds.
    public static let `default` = TokenFetchSettings()
}
