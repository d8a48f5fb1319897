/// `type: google_service_account`: a Google service-account key file (the JSON with
/// `private_key`, `client_email`, `token_uri`), read whole and re-read when it changes; each
/// fetch signs an assertion with its key (RS256, `kid` the key's id) and trades it at its
/// `token_uri` (RFC 7523 §2.1, as Google's libraries do).
public struct GoogleServiceAccountConfig: Sendable, Equatable {
    /// `keyFile`: the key file's path (resolved against the config file's directory).
    public var keyFile: String
    /// `scope`: the scopes of an access token (space-separated), asserted in the JWT's `scope`
    /// claim as Google expects. Exactly one of this and ``targetAudience``.
    public var scope: String?
    /// `targetAudience`: the audience of an OpenID Connect ID token (Cloud Run, IAP), asserted
    /// as `target_audience`; the answer's `id_token` is then the token.
    public var targetAudience: String?
    /// `subject`: the user to act for (domain-wide delegation), asserted as `sub`; nil: none.
    public var subject: String?
    /// Token renewal timing.
    public var fetch: TokenFetchSettings
    /// TLS to the key file's `token_uri`.
    public var tls: TLSSettings

    /// Creates the settings.
    public init(keyFile: String, scope: String? = nil, targetAudience: String? = nil, subject: String? = nil,
                fetch: TokenFetchSettings = TokenFetchSettings(), tls: TLSSettings = .default) {
        self.keyFile = keyFile
        self.scope = scope
        self.targetAudience = targetAudience
        self.subject = subject
        self.fetch = fetch
        self.tls = tls
    }
}
