/// `credentials.<name>.grant`: how an `oauth2` credential obtains its token.
public enum OAuth2Grant: Sendable, Equatable {
    /// RFC 6749 §4.4 client credentials (the default).
    case clientCredentials
    /// RFC 8693 token exchange with a token read from a file as the subject (workload identity
    /// federation: a Kubernetes projected service-account token), re-read before every exchange.
    case sts(subjectTokenFile: String, subjectTokenType: String)
    /// RFC 7523 §2.1: a JWT the sidecar signs with `signingKeyFile` (`iss` the client id, `sub`
    /// `subject` or the client id, `aud` the token URL unless `assertionAudience` says, `iat`,
    /// `exp`, `jti`) is the grant.
    case jwtBearer(subject: String?)
    /// RFC 6749 §6: the refresh token in `refreshTokenFile` (put there once; rewritten when
    /// the server rotates it).
    case refreshToken(file: String)

    /// Whether the grant is a JWT the sidecar signs (`signingKeyFile` then signs it).
    public var signsAssertion: Bool {
        if case .jwtBearer = self { return true }
        return false
    }

    /// The name used in the configuration.
    public var name: String {
        switch self {
        case .clientCredentials: return "client_credentials"
        case .sts: return "token_exchange"
        case .jwtBearer: return "jwt_bearer"
        case .refreshToken: return "refresh_token"
        }
    }
}
