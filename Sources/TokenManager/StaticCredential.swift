/// A fixed bearer token (an API key) read from the configuration, a file or the environment.
public final class StaticCredential: Credential {
    /// The credential's name.
    public let name: String
    private let token: AccessToken

    /// Wraps `token`, which never expires.
    public init(name: String, token: String) {
        self.name = name
        self.token = AccessToken(value: token)
    }

    /// Always the configured token.
    public func currentToken() -> AccessToken? { token }
}
