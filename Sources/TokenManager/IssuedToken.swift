import Tracing

/// A fetched token with its timeline.
public struct IssuedToken: Sendable, Equatable {
    /// The token to inject; its `expiresAt` is ``usableUntil``.
    public let token: AccessToken
    /// When the fetch that produced it started (the lifetime counts from here).
    public let issuedAt: ContinuousClock.Instant
    /// `issuedAt + lifetime`: when the server stops accepting it.
    public let expiresAt: ContinuousClock.Instant
    /// `expiresAt` minus a skew (10 s, or a tenth of the lifetime below 100 s): the last moment it is handed out.
    public let usableUntil: ContinuousClock.Instant

    /// Computes the timeline of a token of `lifetime` requested at `issuedAt`; `generation`
    /// becomes the token's ``AccessToken/generation``, `binding` its ``AccessToken/binding``.
    public init(value: String, issuedAt: ContinuousClock.Instant, lifetime: Duration, generation: UInt64 = 0,
                binding: TokenBinding? = nil, fetchSpan: SpanContext? = nil) {
        let skew = lifetime < .seconds(100) ? lifetime / 10 : .seconds(10)
        self.issuedAt = issuedAt
        self.expiresAt = issuedAt + lifetime
        self.usableUntil = issuedAt + lifetime - skew
        self.token = AccessToken(value: value, expiresAt: usableUntil, generation: generation, binding: binding,
                                 fetchSpan: fetchSpan)
    }

    /// The same token and timeline as generation `generation` (a cached token adopted by
    /// another credential).
    public func reissued(generation: UInt64) -> IssuedToken {
        IssuedToken(value: token.value, issuedAt: issuedAt, lifetime: lifetime, generation: generation, binding: token.binding,
                    fetchSpan: token.fetchSpan)
    }

    /// The lifetime the server gave.
    public var lifetime: Duration { expiresAt - issuedAt }

    /// Whether it may be handed out at `now`.
    public func isUsable(at now: ContinuousClock.Instant) -> Bool { now < usableUntil }
}
