/// The complete, validated configuration of the sidecar.
public struct SidecarConfig: Sendable, Equatable {
    /// The path it was loaded from (`"<string>"` when parsed from text).
    public var file: String
    /// Where the proxy listens (default `127.0.0.1:8080`).
    public var listen: ListenAddress
    /// Number of event-loop threads, 1...64 (default 1).
    public var workers: Int
    /// Logging verbosity (default `info`).
    public var logLevel: LogLevel
    /// What to do with destinations no route matches (default `deny`).
    public var otherHosts: OtherHostsPolicy
    /// Capacity of the token cache, 1...100000 (default 100).
    public var cacheSize: Int
    /// Process-wide timeouts.
    public var timeouts: Timeouts
    /// Most simultaneous connections to one upstream, 1...100000 (default 256).
    public var maxConnectionsPerUpstream: Int
    /// Most simultaneous client connections (requests and tunnels), 1...1000000; `nil` (the
    /// default) derives it from the descriptor limit at start
    /// (``ClientConnectionLimit/derived(descriptorLimit:)``). Each worker holds at most its share
    /// and stops accepting while it does.
    public var maxClientConnections: Int?
    /// What to do with `CONNECT` requests (default `deny`).
    public var connectPolicy: ConnectPolicy
    /// Where the admin endpoints listen (`/healthz`, `/readyz`, `/metrics`, `/tokens`);
    /// default `127.0.0.1:9901`.
    public var admin: ListenAddress
    /// Whether a line is logged per request (default true).
    public var accessLog: Bool
    /// How long SIGTERM/SIGINT let in-flight requests finish (default 15 s).
    public var drainTimeout: Duration
    /// Spooling of responses to clients that fall behind.
    public var spool: SpoolConfig
    /// The Redis that replicas share tokens through; nil (the default) fetches per process.
    public var sharedCache: SharedCacheConfig?
    /// The CA for routes with `intercept: true`; nil: no TLS interception.
    public var intercept: InterceptConfig?
    /// OpenTelemetry trace export (off unless an endpoint is set).
    public var tracing: TracingConfig
    /// Audit records (`audit:`), nil when none are written.
    public var audit: AuditConfig?
    /// The credential endpoints apps' SDKs call (`credentialEndpoints:`), nil when off.
    public var credentialEndpoints: CredentialEndpointsConfig?
    /// `enforcement:` at the top: what a route's rules do when the route does not say (default
    /// `enforce`; `audit` rolls a whole policy out without refusing anything).
    public var enforcement: Enforcement = .enforce
    /// Credentials in file order.
    public var credentials: [CredentialConfig]
    /// Routes in file order.
    public var routes: [RouteConfig]

    /// Creates a configuration; every parameter defaults to the loader's default.
    public init(
        file: String = "<string>",
        listen: ListenAddress = .default,
        workers: Int = 1,
        logLevel: LogLevel = .info,
        otherHosts: OtherHostsPolicy = .deny,
        credentials: [CredentialConfig] = [],
        routes: [RouteConfig] = [],
        cacheSize: Int = 100,
        timeouts: Timeouts = .default,
        maxConnectionsPerUpstream: Int = 256,
        maxClientConnections: Int? = nil,
        connectPolicy: ConnectPolicy = .deny,
        admin: ListenAddress = ListenAddress(host: "127.0.0.1", port: 9901),
        accessLog: Bool = true,
        drainTimeout: Duration = .seconds(15),
        spool: SpoolConfig = SpoolConfig(),
        sharedCache: SharedCacheConfig? = nil,
        intercept: InterceptConfig? = nil,
        tracing: TracingConfig = TracingConfig()
    ) {
        self.tracing = tracing
        self.intercept = intercept
        self.sharedCache = sharedCache
        self.spool = spool
        self.admin = admin
        self.accessLog = accessLog
        self.drainTimeout = drainTimeout
        self.file = file
        self.listen = listen
        self.workers = workers
        self.logLevel = logLevel
        self.otherHosts = otherHosts
        self.credentials = credentials
        self.routes = routes
        self.cacheSize = cacheSize
        self.timeouts = timeouts
        self.maxConnectionsPerUpstream = maxConnectionsPerUpstream
        self.maxClientConnections = maxClientConnections
        self.connectPolicy = connectPolicy
    }

    /// The credential with this name, or nil.
    public func credential(named name: String) -> CredentialConfig? {
        credentials.first { $0.name == name }
    }
}
