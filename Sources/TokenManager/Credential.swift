/// A source of access tokens for one named credential.
///
/// The proxy asks for the current token on every request of a credentialed route, from every
/// worker thread, so ``currentToken()`` must be cheap and must never block on I/O.
public protocol Credential: AnyObject, Sendable {
    /// The credential's name in the configuration.
    var name: String { get }
    /// The token to inject now, or `nil` when no usable token exists (the proxy then answers 503:
    /// it never forwards a request for a credentialed route without its token).
    func currentToken() -> AccessToken?
}
