/// How an OAuth 2.0 client authenticates to the token endpoint (RFC 6749 §2.3.1).
public enum ClientAuthentication: String, Sendable, Equatable, CaseIterable {
    /// HTTP Basic with the form-urlencoded client id and secret (the default).
    case clientSecretBasic = "client_secret_basic"
    /// `client_id` and `client_secret` in the form body.
    case clientSecretPost = "client_secret_post"
}
