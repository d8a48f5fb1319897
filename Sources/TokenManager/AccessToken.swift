import AWSSigning
import Crypto
import EventLoop
import Tracing

/// An access token ready to inject, with what the proxy needs precomputed once per token
/// rather than once per request. Immutable; a class so that handing it to a request costs one
/// reference count, not one per field.
public final class AccessToken: Sendable, Equatable {
    /// The token itself. Never log it; log ``fingerprint``.
    public let value: String
    /// `Authorization` field line, `"Authorization: Bearer <token>\r\n"`, ready to append to a head.
    public let headerLine: [UInt8]
    /// First 8 hex digits of the SHA-256 of the token: enough to tell tokens apart in logs.
    public let fingerprint: String
    /// When the token stops being usable; `nil` for tokens that do not expire (static API keys).
    public let expiresAt: ContinuousClock.Instant?
    /// Which of its credential's tokens this is: 1, 2, … in the order a managed credential made
    /// them current (a refetch that returns the same value is a new generation); 0 for tokens
    /// no managed credential issued. Lets ``Credential/accepted(_:)`` tell tokens apart with
    /// one integer compare.
    public let generation: UInt64

    /// What the token is bound to (a DPoP key, a client certificate), nil for a plain bearer
    /// token. Every request with a DPoP-bound token carries a fresh proof made with this
    /// binding's key (RFC 9449 §7.1).
    public let binding: TokenBinding?

    /// The span of the fetch that produced the token, when fetch spans are recorded: a request
    /// that waited for the token links its span to it.
    public let fetchSpan: SpanContext?
    /// AWS keys a request is re-signed with (a `type: aws` credential's "token"), nil otherwise.
    public let aws: SigV4Credentials?

    /// The `Authorization` scheme: `DPoP` for a token bound to a DPoP key, else `Bearer`.
    public var scheme: String { binding?.dpopKey == nil ? "Bearer" : "DPoP" }

    /// Creates a token; presented with the `DPoP` scheme when `binding` has a DPoP key, else `Bearer`.
    public init(value: String, expiresAt: ContinuousClock.Instant? = nil, generation: UInt64 = 0, binding: TokenBinding? = nil,
                fetchSpan: SpanContext? = nil, aws: SigV4Credentials? = nil) {
        // Fetched AWS credentials travel as one value (``SigV4Credentials/tokenValue``).
        self.aws = aws ?? (value.hasPrefix(SigV4Credentials.tokenPrefix) ? SigV4Credentials(tokenValue: value) : nil)
        self.fetchSpan = fetchSpan
        self.value = value
        self.headerLine = Array("Authorization: \(binding?.dpopKey == nil ? "Bearer" : "DPoP") \(value)\r\n".utf8)
        self.fingerprint = String(Digest.sha256Hex(value).prefix(8))
        self.expiresAt = expiresAt
        self.generation = generation
        self.binding = binding
    }

    /// Whether the token may still be injected at `now`.
    public func isUsable(at now: ContinuousClock.Instant) -> Bool {
        guard let expiresAt else { return true }
        return now < expiresAt
    }

    /// Same value and expiry (the ``generation`` is not compared). Never prints the token value.
    public static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        lhs.value == rhs.value && lhs.expiresAt == rhs.expiresAt
    }
}

extension AccessToken: CustomStringConvertible {
    /// `token(sha256:1a2b3c4d)` — safe to log.
    public var description: String { "token(sha256:\(fingerprint))" }
}
