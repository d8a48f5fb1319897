import TokenManager

/// A request counter key: the route label and the status code.
public struct RequestCounterKey: Hashable, Sendable {
    /// The route's host pattern, or `unrouted`.
    public let route: String
    /// HTTP status sent to the client.
    public let code: Int
    /// The request came on a stream of an app's HTTP/2 connection (label `protocol="h2"`, else
    /// `"http1"`).
    public let http2: Bool

    /// A key for `route` and `code`, over HTTP/1 unless `http2`.
    public init(route: String, code: Int, http2: Bool = false) {
        self.route = route
        self.code = code
        self.http2 = http2
    }
}

/// A key of ``ProxyMetrics/credentialInjections``: the route and where its token went.
public struct InjectionCounterKey: Hashable, Sendable {
    /// The route's host pattern.
    public let route: String
    /// The placement's label (`header:x-api-key`, `query:key`, `basic`) or `placeholder`.
    public let placement: String
}

/// A key of ``ProxyMetrics/policyDecisions``: the route, its credential and the decision.
public struct PolicyDecisionKey: Hashable, Sendable {
    /// The route's label.
    public let route: String
    /// The route's credential, or empty.
    public let credential: String
    /// `allowed`, `denied` or `audited` (``AuditRecord/Decision``).
    public let decision: String
}

/// An upstream connection gauge key.
public struct UpstreamGaugeKey: Hashable, Sendable {
    /// `host:port` of the backend.
    public let upstream: String
    /// `connecting` (TCP/TLS setup under way), `active` (carrying a request) or `idle` (pooled).
    public let state: String
}

/// The proxy's counters: each worker owns one and updates it on its own thread without locks;
/// ``ProxyServer/collectMetrics(_:)`` merges copies taken on each worker's loop.
public struct ProxyMetrics: Sendable, Equatable {
    /// Requests answered, by route and status.
    public var requests: [RequestCounterKey: UInt64] {
        get { requestTally.counts }
        set { requestTally = RequestTally(newValue) }
    }
    /// Where ``requests`` are counted.
    public var requestTally = RequestTally()
    /// Time from a complete request head to the end of the response.
    public var duration = LatencyHistogram()
    /// Errors the proxy answered with, by RFC 9209 type.
    public var upstreamErrors: [String: UInt64] = [:]
    /// Open client connections (a gauge, filled in when collected).
    public var clientConnections = 0
    /// Upstream connections by backend and state (a gauge, filled in when collected).
    public var upstreamConnections: [UpstreamGaugeKey: Int] = [:]
    /// Upstream 401 responses to an injected token, by credential.
    public var upstreamUnauthorized: [String: UInt64] = [:]
    /// Upstream connections discarded because the backend sent bytes beyond a complete
    /// response (they could otherwise reach the next client), by `host:port`.
    public var upstreamDiscarded: [String: UInt64] = [:]
    /// Most distinct upstreams counted per worker in ``upstreamDiscarded`` (then `other`).
    public static let maxUpstreamSeries = 256
    /// Completed TLS handshakes with backends, by `host:port` (filled in when collected).
    public var upstreamTLSHandshakes: [String: UInt64] = [:]
    /// Of those, handshakes that resumed an earlier session, by `host:port`.
    public var upstreamTLSResumed: [String: UInt64] = [:]
    /// Failed `accept` calls (descriptor or memory exhaustion), after which accepting pauses.
    public var acceptErrors: UInt64 = 0
    /// Responses that went (in part) through a spool file because their client fell behind.
    public var spooledResponses: UInt64 = 0
    /// Bytes held in spool files now (a process-wide gauge, filled in when collected).
    public var spoolBytes = 0
    /// Bytes queued toward clients beyond each session's small share (``BufferBudget``; a
    /// process-wide gauge, filled in when collected).
    public var bufferedBytes = 0
    /// Responses cut short because their client had stopped reading while holding a backend
    /// connection another request was waiting for.
    public var stalledClientsCut: UInt64 = 0
    /// Responses whose client left before their end, read to their end and dropped so that their
    /// backend connection was kept (``UpstreamDrain``).
    public var drainedResponses: UInt64 = 0
    /// Connections upgraded after a `101` (WebSocket), by route.
    public var upgradedConnections: [String: UInt64] = [:]
    /// Upgraded connections open now, by route (a gauge).
    public var upgradedOpen: [String: Int] = [:]
    /// TLS handshakes apps refused or broke off on intercepted tunnels, by host and reason
    /// (process-wide: filled in once, not merged).
    public var interceptHandshakeFailures: [InterceptFailureKey: Int] = [:]
    /// Leaf certificates minted for intercepted hosts (process-wide).
    public var interceptCertificatesMinted = 0
    /// What HTTP/2 apps sent that the proxy refused, by reason (``HTTP2Refusal``).
    public var http2Refused: [String: UInt64] = [:]
    /// Requests whose token went elsewhere than the default `Authorization` line (a route's
    /// `inject:` placement, or where the app put a placeholder), by route and placement.
    public var credentialInjections: [InjectionCounterKey: UInt64] {
        get { injectionTally.counts }
        set { injectionTally = Tally(newValue) }
    }
    /// Where ``credentialInjections`` are counted (a route's requests repeat one key: no hashing).
    public var injectionTally = Tally<InjectionCounterKey>()
    /// Audit decisions (one per audit record: requests on routes with rules or limits, and with
    /// `audit:` every request that used a credential), by route, credential and decision.
    public var policyDecisions: [PolicyDecisionKey: UInt64] {
        get { policyTally.counts }
        set { policyTally = Tally(newValue) }
    }
    /// Where ``policyDecisions`` are counted.
    public var policyTally = Tally<PolicyDecisionKey>()

    /// Empty counters.
    public init() {}

    /// Adds another worker's numbers.
    public mutating func merge(_ other: ProxyMetrics) {
        requestTally.merge(other.requestTally)
        duration.merge(other.duration)
        upstreamErrors.merge(other.upstreamErrors, uniquingKeysWith: +)
        clientConnections += other.clientConnections
        upstreamConnections.merge(other.upstreamConnections, uniquingKeysWith: +)
        upstreamUnauthorized.merge(other.upstreamUnauthorized, uniquingKeysWith: +)
        upstreamDiscarded.merge(other.upstreamDiscarded, uniquingKeysWith: +)
        upstreamTLSHandshakes.merge(other.upstreamTLSHandshakes, uniquingKeysWith: +)
        upstreamTLSResumed.merge(other.upstreamTLSResumed, uniquingKeysWith: +)
        acceptErrors += other.acceptErrors
        spooledResponses += other.spooledResponses
        stalledClientsCut += other.stalledClientsCut
        drainedResponses += other.drainedResponses
        upgradedConnections.merge(other.upgradedConnections, uniquingKeysWith: +)
        upgradedOpen.merge(other.upgradedOpen, uniquingKeysWith: +)
        http2Refused.merge(other.http2Refused, uniquingKeysWith: +)
        injectionTally.merge(other.injectionTally)
        policyTally.merge(other.policyTally)
    }
}
