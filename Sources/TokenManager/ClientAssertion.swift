import Crypto
import EventLoop

/// The JWT a client signs to authenticate itself (RFC 7523 §3, OpenID Connect Core §9 for
/// `private_key_jwt` and `client_secret_jwt`): header `{"alg", "typ":"JWT", "kid"?}`, claims
/// `iss` = `sub` = the client id, `aud`, `iat`, `exp` = `iat` + lifetime and a fresh `jti`.
public struct ClientAssertion: Sendable, Equatable {
    /// `iss` and `sub`.
    public let clientId: String
    /// `aud`: the token endpoint URL unless configured otherwise.
    public let audience: String
    /// The JWS header `kid`, if any.
    public let keyId: String?
    /// `exp` - `iat`, in whole seconds (at least 1).
    public let lifetimeSeconds: Int
    /// `sub`: the client id unless a JWT bearer grant names another subject; nil: no `sub`
    /// claim (a Google service account's assertion has none).
    public let subject: String?
    /// Further string claims (a Google assertion's `scope` or `target_audience`).
    public let extraClaims: [String: String]

    /// Settings for every assertion of one credential.
    public init(clientId: String, audience: String, keyId: String?, lifetime: Duration) {
        self.init(issuer: clientId, subject: clientId, audience: audience, keyId: keyId, lifetime: lifetime)
    }

    /// Settings for the assertions of a JWT bearer grant (RFC 7523 §2.1): `iss` = `issuer`,
    /// `sub` = `subject` (none when nil), and `extraClaims` beside the registered ones.
    public init(issuer: String, subject: String?, audience: String, keyId: String?, lifetime: Duration,
                extraClaims: [String: String] = [:]) {
        self.clientId = issuer
        self.subject = subject
        self.audience = audience
        self.keyId = keyId
        self.lifetimeSeconds = max(1, Int(lifetime.components.seconds))
        self.extraClaims = extraClaims
    }

    /// A newly signed assertion issued at `now` (seconds since 1970) with the `jti` given.
    public func signed(with signer: JWSSigner, now: Double, jti: String = ClientAssertion.newJTI()) throws(CryptoError) -> String {
        let issuedAt = Int(now.rounded(.down))
        var header: [String: Any] = ["typ": "JWT"]
        if let keyId { header["kid"] = keyId }
        var claims: [String: Any] = [
            "iss": clientId, "aud": audience,
            "iat": issuedAt, "exp": issuedAt + lifetimeSeconds, "jti": jti,
        ]
        if let subject { claims["sub"] = subject }
        for (name, value) in extraClaims { claims[name] = value }
        return try JWS.compact(header: header, payload: claims, signer: signer)
    }

    /// A `jti` no other assertion will carry: 128 bits from the system's cryptographic random
    /// source (`getrandom`), base64url (22 characters).
    public static func newJTI() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<2 {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Base64.encodeURL(bytes)
    }
}
