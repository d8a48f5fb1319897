import EventLoop

/// A source of access tokens for one named credential.
///
/// The proxy asks for the current token on every request of a credentialed route, from every
/// worker thread, so ``currentToken()`` must be cheap and must never block on I/O.
public protocol Credential: AnyObject, Sendable {
    /// The credential's name in the configuration.
    var name: String { get }
    /// How long a request may wait for a token that does not exist yet (`tokenWait`).
    var tokenWait: Duration { get }
    /// The token to inject now, or `nil` when no usable token exists (the proxy then waits with
    /// ``waitForToken(on:timeout:_:)``; it never forwards a credentialed request without a token).
    func currentToken() -> AccessToken?
    /// Delivers a token once one is usable, or `nil` after `timeout`. Called on `loop`'s thread;
    /// `completion` runs exactly once, on `loop`'s thread.
    func waitForToken(on loop: EventLoop, timeout: Duration, _ completion: @escaping (AccessToken?) -> Void)
    /// The backend rejected `token` (HTTP 401). The first 401 to the current token fetches a
    /// new one at once — once, however many requests report it; later (1 s doubling, up to
    /// `unauthorizedRefetchInterval`) only while the tokens fetched so keep being rejected
    /// before any request succeeded with them (``accepted(_:)``), and at most 4 times per
    /// `unauthorizedRefetchInterval`. The current token stays in use meanwhile (nobody waits).
    ///
    /// `completion` (optional; called on `loop`'s thread, exactly once, within `timeout`) gets a
    /// token different from `token` to replay the request with, or `nil` when there is none
    /// (a static token, a delayed refetch, a refetch that returned the same token or failed):
    /// the 401 is then passed on. Call on `loop`'s thread.
    func rejected(_ token: AccessToken, on loop: EventLoop, timeout: Duration, _ completion: ((AccessToken?) -> Void)?)
    /// A request carrying `token` got a 2xx: the token works, so a later 401 to it is a
    /// revocation and is refetched at once. Any thread; cheap enough for every response (an
    /// integer compare; a message to the token loop at most once per token).
    func accepted(_ token: AccessToken)
    /// Whether a rejection can lead to a different token (so replaying a request that got a
    /// 401 is worth it). `false` for static tokens.
    var refreshable: Bool { get }
    /// The OAuth error code when the token server refused this credential's last request itself
    /// (`invalid_grant`, `invalid_target`, `invalid_scope`): a request that got no token is then
    /// refused (403) rather than told to retry (503). Any thread.
    func refusal() -> String?
}

extension Credential {
    /// Nothing refused: only tokens fetched per caller or per request can be.
    public func refusal() -> String? { nil }
}
