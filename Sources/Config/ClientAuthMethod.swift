/// How an `oauth2` credential authenticates to the token endpoint (RFC 6749 §2.3.1).
public enum ClientAuthMethod: String, Sendable, Equatable, CaseIterable {
    /// `client_secret_basic`: HTTP Basic authentication with the client id and secret (the default).
    case basic
    /// `client_secret_post`: `client_id` and `client_secret` as form parameters.
    case post
}
