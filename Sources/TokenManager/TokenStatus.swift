/// A credential's state for status pages (`/tokens`): never the token value.
public struct TokenStatus: Sendable, Equatable {
    /// The credential's name.
    public var name: String
    /// The variant of the credential (`scope=…`, `subject=sha256:…`), nil for its own token.
    public var variant: String?
    /// The phase when the snapshot was taken (``takenAt``).
    public var phase: TokenPhase
    /// When the snapshot was taken.
    public var takenAt: ContinuousClock.Instant
    /// First 8 hex digits of the SHA-256 of the current token.
    public var fingerprint: String?
    /// When the current token's fetch started.
    public var issuedAt: ContinuousClock.Instant?
    /// When the current token expires at the server.
    public var expiresAt: ContinuousClock.Instant?
    /// When the current token stops being handed out.
    public var usableUntil: ContinuousClock.Instant?
    /// When the next fetch (refresh or retry) is due.
    public var nextFetchAt: ContinuousClock.Instant?
    /// Failures since the last success.
    public var consecutiveFailures: Int
    /// The last failure's message (safe to show), cleared by a success.
    public var lastError: String?
    /// Fetches by result.
    public var counts: TokenFetchCounts
    /// How long token requests took (successful or not).
    public var fetchLatency = LatencyHistogram()
    /// The fleet's shared cache for this credential (nil when none is configured).
    public var sharedCache: SharedCacheStatus?
    /// The current token's `Authorization` scheme (`Bearer`, `DPoP`), if there is a token.
    public var tokenType: String?
    /// The thumbprint (`jkt`) of the DPoP key the current token is bound to.
    public var dpopThumbprint: String?
    /// The `x5t#S256` of the client certificate the current token was requested with (shown
    /// for credentials whose tokens are bound to it).
    public var certificateThumbprint: String?
    /// For a DPoP credential: requests sent again with a server's nonce, at the token endpoint
    /// and at resource servers (live counts, read when the status is).
    public var dpopNonceRetries: DPoPNonceRetries?

    /// The status of a credential that has not started.
    public init(name: String, takenAt: ContinuousClock.Instant) {
        self.name = name
        self.phase = .idle
        self.takenAt = takenAt
        self.consecutiveFailures = 0
        self.counts = TokenFetchCounts()
    }

    /// A snapshot of `state` at `now`.
    public init(name: String, state: TokenRefreshState, now: ContinuousClock.Instant) {
        self.init(name: name, takenAt: now)
        phase = state.phase(at: now)
        if let current = state.current {
            fingerprint = current.token.fingerprint
            issuedAt = current.issuedAt
            expiresAt = current.expiresAt
            usableUntil = current.usableUntil
            tokenType = current.token.scheme
            dpopThumbprint = current.token.binding?.dpopKey?.thumbprint
            certificateThumbprint = current.token.binding?.certificate?.thumbprint
        }
        nextFetchAt = state.nextFetchAt
        consecutiveFailures = state.consecutiveFailures
        lastError = state.lastError?.description
        counts = state.counts
    }
}
