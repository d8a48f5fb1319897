/// How `private_key_jwt` and `client_secret_jwt` credentials build their client assertion
/// (RFC 7523 §3): `iss` = `sub` = the client id, `aud`, `iat`, `exp` = `iat` + ``lifetime``,
/// a fresh `jti`. A new assertion is signed for every fetch.
public struct JWTAssertionSettings: Sendable, Equatable {
    /// `signingKeyFile`: the PEM private key (PKCS#8 or traditional; RSA signs RS256, EC P-256
    /// signs ES256), resolved against the config file's directory; nil for `client_secret_jwt`,
    /// which signs HS256 with the secret. Re-read when it changes (rotation without restart).
    public var signingKeyFile: String?
    /// `signingKeyId`: the JWS header's `kid`, if any.
    public var keyId: String?
    /// `assertionAudience`: the `aud` claim; nil means the token URL.
    public var audience: String?
    /// `assertionLifetime`: `exp` - `iat` (default 60 s, at most 5 minutes).
    public var lifetime: Duration

    /// The default `assertionLifetime`.
    public static let defaultLifetime: Duration = .seconds(60)
    /// The largest accepted `assertionLifetime`.
    public static let maximumLifetime: Duration = .seconds(300)

    /// Creates settings; every parameter defaults to the loader's default.
    public init(signingKeyFile: String? = nil, keyId: String? = nil, audience: String? = nil,
                lifetime: Duration = JWTAssertionSettings.defaultLifetime) {
        self.signingKeyFile = signingKeyFile
        self.keyId = keyId
        self.audience = audience
        self.lifetime = lifetime
    }
}
