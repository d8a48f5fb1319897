import EventLoop

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

    /// A static token is always there: nobody waits.
    public var tokenWait: Duration { .zero }

    /// Always the configured token.
    public func currentToken() -> AccessToken? { token }

    /// Completes at once with the token.
    public func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) {
        completion(token)
    }

    /// A static token cannot be replaced: a 401 is passed to the client as it is.
    public func invalidate(_ token: AccessToken) {}

    /// Static tokens never change.
    public var refreshable: Bool { false }
}
