/// When and how patiently a fetched token is obtained and renewed
/// (`refreshAt`, `defaultLifetime`, `tokenWait` of `mca` and `oauth2` credentials).
public struct TokenFetchSettings: Sendable, Equatable {
    /// Fraction of a token's lifetime after which it is renewed, 0.01...0.99
    /// (written as a percentage, `refreshAt: 80%`; default 0.8).
    public var refreshAt: Double
    /// Lifetime assumed when the token response gives no `expires_in` (default 5 minutes, > 0).
    public var defaultLifetime: Duration
    /// How long a request may wait for a token being fetched before it fails (default 5 seconds, >= 0).
    public var tokenWait: Duration

    /// Creates settings; every parameter defaults to the loader's default.
    public init(refreshAt: Double = 0.8, defaultLifetime: Duration = .seconds(300), tokenWait: Duration = .seconds(5)) {
        self.refreshAt = refreshAt
        self.defaultLifetime = defaultLifetime
        self.tokenWait = tokenWait
    }

    /// Renew at 80%, assume 5 minutes, wait up to 5 seconds.
    public static let `default` = TokenFetchSettings()
}
