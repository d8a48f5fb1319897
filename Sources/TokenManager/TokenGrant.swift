import Tracing

/// A token the endpoint issued and how long it lives, as parsed from a successful response.
public struct TokenGrant: Sendable, Equatable, CustomStringConvertible {
    /// Where the lifetime came from.
    public enum LifetimeSource: String, Sendable, Equatable {
        /// The response's `expires_in`.
        case expiresIn = "expires_in"
        /// The `exp` claim of a JWT access token (no `expires_in` in the response).
        case jwtExpiry = "jwt_exp"
        /// Neither was present: the configured default lifetime.
        case defaultLifetime = "default"
        /// Cut to the expiry of the subject token it was exchanged for.
        case subjectExpiry = "subject_exp"
    }

    /// The access token. Never log it.
    public let value: String
    /// How long the token lives from when it was requested.
    public let lifetime: Duration
    /// Where ``lifetime`` came from.
    public let lifetimeSource: LifetimeSource
    /// The key the token is bound to (its `token_type` was `DPoP`), nil for a bearer token.
    public var binding: TokenBinding?
    /// The span of the fetch attempt that got it, when fetch spans are recorded.
    public var fetchSpan: SpanContext?

    /// Memberwise initializer.
    public init(value: String, lifetime: Duration, lifetimeSource: LifetimeSource, binding: TokenBinding? = nil) {
        self.value = value
        self.lifetime = lifetime
        self.lifetimeSource = lifetimeSource
        self.binding = binding
    }

    /// The grant with its lifetime cut to `seconds` (the subject it was exchanged for expires
    /// then); a failure when less than a second is left.
    public func limited(to seconds: Double) -> Result<TokenGrant, TokenFetchError> {
        guard seconds >= 1 else {
            return .failure(TokenFetchError(.oauthError(status: 400, code: "invalid_grant",
                                                        description: "the subject token expired during the exchange")))
        }
        let cap = Duration.milliseconds(Int64((min(seconds, 366 * 86_400) * 1000).rounded(.down)))
        guard cap < lifetime else { return .success(self) }
        var limited = TokenGrant(value: value, lifetime: cap, lifetimeSource: .subjectExpiry, binding: binding)
        limited.fetchSpan = fetchSpan
        return .success(limited)
    }

    /// `grant(sha256:…, lifetime …)` — never the token.
    public var description: String {
        "grant(\(AccessToken(value: value).description), lifetime \(lifetime) from \(lifetimeSource.rawValue))"
    }
}
