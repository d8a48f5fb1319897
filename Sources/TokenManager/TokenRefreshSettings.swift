/// How a managed credential fetches and refreshes its token.
public struct TokenRefreshSettings: Sendable, Equatable {
    /// Refresh when this fraction of the lifetime has passed (0 < refreshAt ≤ 1; default 0.8).
    public var refreshAt: Double
    /// ± this fraction of the lifetime is added at random to the refresh time (default 0.02).
    public var refreshJitter: Double
    /// The lifetime of a token whose response gives neither `expires_in` nor a JWT `exp` (default 1 h).
    public var defaultLifetime: Duration
    /// How long a request may wait for a token that does not exist yet (default 5 s).
    public var tokenWait: Duration
    /// Retry delays after failures (default base 0.5 s, cap 60 s).
    public var backoff: Backoff
    /// The longest `Retry-After` honoured (default 10 min).
    public var maxRetryAfter: Duration
    /// The overall limit for one fetch, used by the default transport (default 10 s).
    public var fetchTimeout: Duration
    /// The longest wait before a refetch caused by an upstream 401 (default 10 s). The first 401
    /// to the current token refetches at once; only while the tokens refetched keep being
    /// rejected before any request succeeded with them does the wait grow, 1 s doubling up to
    /// this (``unauthorizedRefetchDelay(streak:)``); and at most
    /// ``unauthorizedRefetchesPerInterval`` refetches caused by 401s start within this: a backend
    /// that rejects every token must not make the proxy storm the token server.
    public var unauthorizedRefetchInterval: Duration
    /// Whether a token is refreshed ahead of its expiry (the default). Without, the credential
    /// fetches on demand: when a request finds no usable token, and after a failure answers the
    /// waiting requests at once (nil) and fetches again only for a request that comes after the
    /// backoff — a token tied to one caller's subject is never fetched for nobody.
    public var refreshAhead: Bool

    /// The most refetches caused by 401s that start within any ``unauthorizedRefetchInterval``
    /// (4: with the default 10 s, at most 8 in 20 s, whatever the backends accept or reject).
    public static let unauthorizedRefetchesPerInterval = 4

    /// Creates settings; every parameter has the documented default.
    public init(refreshAt: Double = 0.8, refreshJitter: Double = 0.02, defaultLifetime: Duration = .seconds(3600),
                tokenWait: Duration = .seconds(5), backoff: Backoff = Backoff(),
                maxRetryAfter: Duration = .seconds(600), fetchTimeout: Duration = .seconds(10),
                unauthorizedRefetchInterval: Duration = .seconds(10), refreshAhead: Bool = true) {
        self.refreshAhead = refreshAhead
        self.refreshAt = min(max(refreshAt, 0.05), 1)
        self.refreshJitter = min(max(refreshJitter, 0), 0.2)
        self.defaultLifetime = defaultLifetime
        self.tokenWait = tokenWait
        self.backoff = backoff
        self.maxRetryAfter = maxRetryAfter
        self.fetchTimeout = fetchTimeout
        self.unauthorizedRefetchInterval = unauthorizedRefetchInterval
    }

    /// The wait before the refetch caused by a 401 when `streak` tokens in a row were rejected
    /// before it without one that earned a 2xx: none for the first, then 1 s (at most
    /// ``unauthorizedRefetchInterval``) doubling per token, capped at ``unauthorizedRefetchInterval``.
    public func unauthorizedRefetchDelay(streak: Int) -> Duration {
        guard streak > 0 else { return .zero }
        let backoff = Backoff(base: min(.seconds(1), unauthorizedRefetchInterval), cap: unauthorizedRefetchInterval)
        return backoff.ceiling(attempt: streak - 1)
    }
}
