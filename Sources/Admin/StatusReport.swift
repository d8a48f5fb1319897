import JSON
/// What the status page at `/` shows: the sidecar's credentials, routes, upstream pools and
/// request counts at one moment. Never a token or a secret: credentials appear by name, kind,
/// fingerprint and counters only.
public struct StatusReport: Sendable, Equatable {
    /// One credential.
    public struct Credential: Sendable, Equatable {
        /// The name under `credentials:`.
        public var name: String
        /// `static`, `oauth2 (private_key_jwt)`, `mca (certificate)`, ...
        public var kind: String
        /// `valid`, `refreshing`, `failing`, `static`, ...
        public var state: String
        /// The current token's fingerprint, if there is a token.
        public var fingerprint: String?
        /// Seconds until the current token expires (negative once expired), if known.
        public var expiresInSeconds: Int?
        /// When the last fetch started, if any.
        public var lastFetch: WallClockTime?
        /// The last fetch's error (safe to show), nil after a success.
        public var lastError: String?
        /// Successful fetches.
        public var fetches: Int
        /// Failed fetches.
        public var failures: Int
        /// Backend 401 answers to this credential's tokens.
        public var unauthorized: Int
        /// The fleet's shared token cache, when one is configured.
        public var sharedCache: SharedCacheReport?
        /// How the current token is presented (scheme, key and certificate thumbprints).
        public var binding: TokenBindingReport?

        /// Creates a row.
        public init(name: String, kind: String, state: String, fingerprint: String? = nil, expiresInSeconds: Int? = nil,
                    lastFetch: WallClockTime? = nil, lastError: String? = nil, fetches: Int = 0, failures: Int = 0,
                    unauthorized: Int = 0, sharedCache: SharedCacheReport? = nil, binding: TokenBindingReport? = nil) {
            self.sharedCache = sharedCache
            self.binding = binding
            self.name = name
            self.kind = kind
            self.state = state
            self.fingerprint = fingerprint
            self.expiresInSeconds = expiresInSeconds
            self.lastFetch = lastFetch
            self.lastError = lastError
            self.fetches = fetches
            self.failures = failures
            self.unauthorized = unauthorized
        }
    }

    /// One route.
    public struct Route: Sendable, Equatable {
        /// The host pattern.
        public var host: String
        /// The upstream URL, or `the requested host`.
        public var upstream: String
        /// The credential injected, if any.
        public var credential: String?
        /// `replace` or `keep`.
        public var clientAuthorization: String

        /// Creates a row.
        public init(host: String, upstream: String, credential: String?, clientAuthorization: String) {
            self.host = host
            self.upstream = upstream
            self.credential = credential
            self.clientAuthorization = clientAuthorization
        }
    }

    /// The connections to one upstream.
    public struct Pool: Sendable, Equatable {
        /// `host:port`.
        public var upstream: String
        /// Pooled, waiting for a request.
        public var idle: Int
        /// Carrying a request.
        public var leased: Int
        /// TCP or TLS setup under way.
        public var connecting: Int

        /// Creates a row.
        public init(upstream: String, idle: Int, leased: Int, connecting: Int) {
            self.upstream = upstream
            self.idle = idle
            self.leased = leased
            self.connecting = connecting
        }
    }

    /// What is left of one route's or credential's `limits:`.
    public struct Limit: Sendable, Equatable {
        /// `route api.test:443` or `credential partner`.
        public var scope: String
        /// `50/s, burst 100`, when there is a rate.
        public var rate: String?
        /// Tokens in the bucket now (whole), when there is a rate.
        public var tokens: Int?
        /// `10000/day`, when there is a budget.
        public var budget: String?
        /// Requests left in this period, when there is a budget.
        public var remaining: Int?
        /// Seconds until the period ends, when there is a budget.
        public var resetsInSeconds: Int?
        /// Requests refused by the rate and by the budget.
        public var refused: Int

        /// Creates a row.
        public init(scope: String, rate: String?, tokens: Int?, budget: String?, remaining: Int?, resetsInSeconds: Int?, refused: Int) {
            self.scope = scope
            self.rate = rate
            self.tokens = tokens
            self.budget = budget
            self.remaining = remaining
            self.resetsInSeconds = resetsInSeconds
            self.refused = refused
        }
    }

    /// When the report was taken.
    public var generatedAt: WallClockTime
    /// Seconds since the sidecar started.
    public var uptimeSeconds: Int
    /// Credentials, by name.
    public var credentials: [Credential]
    /// Routes, in configuration order.
    public var routes: [Route]
    /// Upstream pools, by upstream.
    public var pools: [Pool]
    /// Requests answered since start.
    public var requests: Int
    /// Requests per second since the previous report (or since start for the first).
    public var requestsPerSecond: Double
    /// Open client connections.
    public var clientConnections: Int
    /// Error answers since start by `Proxy-Status` error type.
    public var errors: [(type: String, count: Int)]
    /// Trace export.
    public var tracing: TracingReport = .off
    /// Every route's and credential's limits.
    public var limits: [Limit] = []
    /// The configuration and its reloads, when known.
    public var configuration: ConfigurationReport?

    /// Creates a report.
    public init(generatedAt: WallClockTime, uptimeSeconds: Int, credentials: [Credential], routes: [Route], pools: [Pool],
                requests: Int, requestsPerSecond: Double, clientConnections: Int, errors: [(type: String, count: Int)]) {
        self.generatedAt = generatedAt
        self.uptimeSeconds = uptimeSeconds
        self.credentials = credentials
        self.routes = routes
        self.pools = pools
        self.requests = requests
        self.requestsPerSecond = requestsPerSecond
        self.clientConnections = clientConnections
        self.errors = errors
    }

    /// Equal when every part is equal.
    public static func == (a: StatusReport, b: StatusReport) -> Bool {
        a.generatedAt == b.generatedAt && a.uptimeSeconds == b.uptimeSeconds && a.credentials == b.credentials
            && a.routes == b.routes && a.pools == b.pools && a.requests == b.requests
            && a.requestsPerSecond == b.requestsPerSecond && a.clientConnections == b.clientConnections
            && a.errors.map(\.type) == b.errors.map(\.type) && a.errors.map(\.count) == b.errors.map(\.count)
            && a.tracing == b.tracing && a.limits == b.limits && a.configuration == b.configuration
    }

    /// The JSON document `/` answers with `Accept: application/json` (the same data as the page).
    public var json: JSONValue {
        .object([
            ("generatedAt", .string(generatedAt.iso8601)),
            ("uptimeSeconds", .int(uptimeSeconds)),
            ("requests", .int(requests)),
            ("requestsPerSecond", .double((requestsPerSecond * 10).rounded() / 10)),
            ("clientConnections", .int(clientConnections)),
            ("errors", .object(errors.map { ($0.type, .int($0.count)) })),
            ("credentials", .array(credentials.map { credential in
                .object([
                    ("name", .string(credential.name)),
                    ("kind", .string(credential.kind)),
                    ("state", .string(credential.state)),
                    ("fingerprint", .string(credential.fingerprint)),
                    ("expiresInSeconds", credential.expiresInSeconds.map { .int($0) } ?? .null),
                    ("lastFetch", .string(credential.lastFetch?.iso8601)),
                    ("lastError", .string(credential.lastError)),
                    ("fetches", .int(credential.fetches)),
                    ("failures", .int(credential.failures)),
                    ("unauthorized", .int(credential.unauthorized)),
                ] + (credential.binding?.members ?? []) + (credential.sharedCache.map { [("sharedCache", $0.json)] } ?? []))
            })),
            ("routes", .array(routes.map { route in
                .object([
                    ("host", .string(route.host)),
                    ("upstream", .string(route.upstream)),
                    ("credential", .string(route.credential)),
                    ("clientAuthorization", .string(route.clientAuthorization)),
                ])
            })),
            ("pools", .array(pools.map { pool in
                .object([
                    ("upstream", .string(pool.upstream)),
                    ("idle", .int(pool.idle)),
                    ("leased", .int(pool.leased)),
                    ("connecting", .int(pool.connecting)),
                ])
            })),
            ("tracing", tracing.json),
            ("configuration", configuration?.json ?? .null),
            ("limits", .array(limits.map { limit in
                .object([
                    ("scope", .string(limit.scope)),
                    ("rate", .string(limit.rate)),
                    ("tokens", limit.tokens.map { .int($0) } ?? .null),
                    ("budget", .string(limit.budget)),
                    ("remaining", limit.remaining.map { .int($0) } ?? .null),
                    ("resetsInSeconds", limit.resetsInSeconds.map { .int($0) } ?? .null),
                    ("refused", .int(limit.refused)),
                ])
            })),
        ])
    }
}
