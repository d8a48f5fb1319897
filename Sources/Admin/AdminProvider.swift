/// Where ``AdminServer`` gets what it serves. Admin knows nothing of the proxy or the token
/// manager; the executable wires these closures to them.
///
/// Threading: every closure is called on the admin server's loop thread. The completions may
/// be called from any thread (e.g. from a token manager's loop), exactly once each; the server
/// hops back to its own loop before answering. A completion that never comes leaves the client
/// waiting until the server's idle timeout closes the connection.
public struct AdminProvider: Sendable {
    /// Liveness: false once the process is shutting down (`/healthz` then answers 503).
    public var isServing: @Sendable () -> Bool
    /// Readiness for `/readyz`.
    public var readiness: @Sendable (@escaping @Sendable (Readiness) -> Void) -> Void
    /// The metric families for `/metrics`.
    public var metrics: @Sendable (@escaping @Sendable ([MetricFamily]) -> Void) -> Void
    /// Token status for `/tokens`.
    public var tokens: @Sendable (@escaping @Sendable ([TokenReport]) -> Void) -> Void
    /// The status page's data for `/` (nil: the page says there is no status to show).
    public var status: @Sendable (@escaping @Sendable (StatusReport?) -> Void) -> Void
    /// `POST /reload`: loads the configuration file again; the completion gets whether it
    /// applied and the configuration's state after it (nil: reloading is not available).
    public var reload: @Sendable (@escaping @Sendable ((applied: Bool, report: ConfigurationReport)?) -> Void) -> Void

    /// Creates a provider. Defaults: serving, ready, no metrics, no tokens, no status, no reload.
    public init(
        isServing: @escaping @Sendable () -> Bool = { true },
        readiness: @escaping @Sendable (@escaping @Sendable (Readiness) -> Void) -> Void = { $0(Readiness(ready: true)) },
        metrics: @escaping @Sendable (@escaping @Sendable ([MetricFamily]) -> Void) -> Void = { $0([]) },
        tokens: @escaping @Sendable (@escaping @Sendable ([TokenReport]) -> Void) -> Void = { $0([]) },
        status: @escaping @Sendable (@escaping @Sendable (StatusReport?) -> Void) -> Void = { $0(nil) },
        reload: @escaping @Sendable (@escaping @Sendable ((applied: Bool, report: ConfigurationReport)?) -> Void) -> Void = { $0(nil) }
    ) {
        self.reload = reload
        self.isServing = isServing
        self.readiness = readiness
        self.metrics = metrics
        self.tokens = tokens
        self.status = status
    }
}
