/// A credential whose token comes from an OAuth 2.0 client credentials
/// grant (type `oauth2`, RFC 6749 §4.4).
public struct OAuth2Config: Sendable, Equatable {
    /// The token endpoint (no query).
    public var tokenUrl: EndpointURL
    /// The client id (empty: none is sent, for `auth: none`).
    public var clientId: String
    /// How the token is obtained (default client credentials).
    public var grant: OAuth2Grant
    /// Where the client secret comes from; nil for the methods without one
    /// (`private_key_jwt`, `assertion_file`, `tls_client_auth`).
    public var secret: SecretSource?
    /// How the client authenticates (default `.basic`).
    public var auth: ClientAuthMethod
    /// How the JWT assertion is built, for `private_key_jwt` and `client_secret_jwt`; nil otherwise.
    public var assertion: JWTAssertionSettings?
    /// `assertionFile` (resolved path), for `assertion_file`: the JWT to send, re-read before every fetch.
    public var assertionFile: String?
    /// The `scope` parameter, if any.
    public var scope: String?
    /// The `audience` parameter, if any.
    public var audience: String?
    /// The `resource` parameter (RFC 8707), an absolute URI, if any.
    public var resource: String?
    /// Extra form parameters, in file order.
    public var params: [FormParameter]
    /// Renewal timing.
    public var fetch: TokenFetchSettings
    /// TLS to the token server (only meaningful for an https `tokenUrl`).
    public var tls: TLSSettings
    /// DPoP (`dpop`): the tokens are bound to this key and every request proves it; nil: bearer tokens.
    public var dpop: DPoPSettings?

    /// Creates a configuration; optional parameters default to the loader's defaults.
    public init(
        tokenUrl: EndpointURL,
        clientId: String,
        secret: SecretSource?,
        auth: ClientAuthMethod = .basic,
        assertion: JWTAssertionSettings? = nil,
        assertionFile: String? = nil,
        scope: String? = nil,
        audience: String? = nil,
        resource: String? = nil,
        params: [FormParameter] = [],
        fetch: TokenFetchSettings = .default,
        tls: TLSSettings = .default,
        grant: OAuth2Grant = .clientCredentials,
        dpop: DPoPSettings? = nil
    ) {
        self.dpop = dpop
        self.grant = grant
        self.tokenUrl = tokenUrl
        self.clientId = clientId
        self.secret = secret
        self.auth = auth
        self.assertion = assertion
        self.assertionFile = assertionFile
        self.scope = scope
        self.audience = audience
        self.resource = resource
        self.params = params
        self.fetch = fetch
        self.tls = tls
    }
}
