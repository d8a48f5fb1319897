/// The kind of a credential, selected by its `type:` key.
public enum CredentialKind: Sendable, Equatable {
    /// `type: static` — a fixed bearer token.
    case staticToken(StaticTokenConfig)
    /// `type: mca` — a token from an IBM Mobile Client Access / AppID server.
    case mca(MCAConfig)
    /// `type: oauth2` — a token from an OAuth 2.0 client credentials grant (RFC 6749 §4.4).
    case oauth2(OAuth2Config)
    /// `type: google_service_account` — a token from a Google service-account key file.
    case googleServiceAccount(GoogleServiceAccountConfig)
    /// `type: aws` — AWS credentials requests are re-signed with (SigV4).
    case aws(AWSCredentialConfig)

    /// Whether this is an `oauth2` credential (the only kind that fetches tokens per scope or caller).
    public var isOAuth2: Bool { typeName == "oauth2" }

    /// The `type:` value that selects this kind.
    public var typeName: String {
        switch self {
        case .staticToken: return "static"
        case .mca: return "mca"
        case .oauth2: return "oauth2"
        case .googleServiceAccount: return "google_service_account"
        case .aws: return "aws"
        }
    }
}
