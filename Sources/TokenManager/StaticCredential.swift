import EventLoop

/// A fixed bearer token (an API key) read from the configuration, a file or the environment.
public final class StaticCredential: Credential {
    /// The credential's name.
    public let name: String
    private let token: Locked<AccessToken>

    /// Wraps `token`, which never expires.
    public init(name: String, token: String) {
        self.name = name
        self.token = Locked(AccessToken(value: token))
    }

    /// Replaces the token (a rotated `tokenFile`); requests from now on carry the new one.
    public func replace(token value: String) {
        let fresh = AccessToken(value: value)
        token.withLock { if $0.value != value { $0 = fresh } }
    }

    /// A static token is always there: nobody waits.
    public var tokenWait: Duration { .zero }

    /// Always the configured token.
    public func currentToken() -> AccessToken? { token.withLock { $0 } }

    /// Completes at once with the token.
    public func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void) {
        completion(currentToken())
    }

    /// A static token cannot be replaced: a 401 is passed to the client as it is.
    public func rejected(_ token: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?) {
        completion?(nil)
    }

    /// Nothing to learn: a static token is never refetched.
    public func accepted(_ token: AccessToken) {}

    /// Static tokens never change.
    public var refreshable: Bool { false }
}
