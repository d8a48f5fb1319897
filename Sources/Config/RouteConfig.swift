/// One entry of `routes:`: which destinations it covers and what to do with them.
public struct RouteConfig: Sendable, Equatable {
    /// The destinations this route applies to.
    public var host: HostPattern
    /// Where to send matching requests; nil means the requested destination itself.
    public var upstream: UpstreamAddress?
    /// Keep the client's `Host` header instead of rewriting it to the upstream's authority.
    public var preserveHost: Bool
    /// The name of the credential whose token is injected; nil injects nothing.
    public var credential: String?
    /// TLS settings for an https upstream (always `.default` otherwise).
    public var tls: TLSSettings
    /// Whether a client's own `Authorization` replaces injection (`keep`) or is dropped (`replace`, the default).
    public var clientAuthorization: ClientAuthorizationPolicy
    /// A CONNECT to this route's host is answered by the sidecar as the TLS server for that name
    /// (a leaf minted by its CA), and the requests inside run through the route like plain ones.
    public var intercept: Bool
    /// Protocols besides `websocket` a request may upgrade to (`upgrades:`, lowercase tokens):
    /// any other `Upgrade` is removed and the request served as plain HTTP (RFC 9110 §7.8).
    public var upgrades: [String]
    /// How long an upgraded connection may last (`maxUpgradedLifetime:`); nil: as long as both
    /// sides keep it open. A WebSocket then gets a `1001 Going Away` close at a frame boundary.
    public var maxUpgradedLifetime: Duration?
    /// `clientCertificate: credential`: the upstream TLS connection presents the certificate the
    /// credential's current token was requested with (RFC 8705 §3 certificate-bound tokens).
    public var presentsCredentialCertificate: Bool
    /// The HTTP version spoken to the upstream (`upstreamProtocol:`).
    public var upstreamProtocol: UpstreamProtocol
    /// Where the credential goes (`inject:`); nil: `Authorization: Bearer <token>`.
    public var placement: CredentialPlacement?
    /// What the app may do with the credential (`rules:`, `enforcement:`); nil: anything.
    public var policy: RoutePolicy?
    /// What the app may spend through this route (`limits:`), if limited.
    public var limits: LimitsConfig?
    /// The token exchange of a `clientAuthorization: exchange` route (nil otherwise).
    public var exchange: STSSettings? {
        get { perRequest?.exchange }
        set { perRequest = PerRequestSettings.make(exchange: newValue, requested: requested) }
    }
    /// Scopes or audience chosen per request (nil: the credential's own for every request).
    public var requested: RequestedTokenSettings? {
        get { perRequest?.requested }
        set { perRequest = PerRequestSettings.make(exchange: exchange, requested: newValue) }
    }
    /// Both, behind one reference: the router copies a route per request, and most routes have
    /// neither (a nil reference costs nothing to copy).
    private var perRequest: PerRequestSettings?

    /// The rarely used per-request settings of a route, immutable (replaced when set).
    private final class PerRequestSettings: Sendable, Equatable {
        let exchange: STSSettings?
        let requested: RequestedTokenSettings?

        private init(exchange: STSSettings?, requested: RequestedTokenSettings?) {
            self.exchange = exchange
            self.requested = requested
        }

        static func make(exchange: STSSettings?, requested: RequestedTokenSettings?) -> PerRequestSettings? {
            exchange == nil && requested == nil ? nil : PerRequestSettings(exchange: exchange, requested: requested)
        }

        static func == (lhs: PerRequestSettings, rhs: PerRequestSettings) -> Bool {
            lhs.exchange == rhs.exchange && lhs.requested == rhs.requested
        }
    }

    /// Creates a route.
    public init(
        host: HostPattern, upstream: UpstreamAddress? = nil, preserveHost: Bool = false, credential: String? = nil,
        tls: TLSSettings = .default, clientAuthorization: ClientAuthorizationPolicy = .replace, intercept: Bool = false,
        exchange: STSSettings? = nil, requested: RequestedTokenSettings? = nil,
        presentsCredentialCertificate: Bool = false, upgrades: [String] = [], maxUpgradedLifetime: Duration? = nil,
        upstreamProtocol: UpstreamProtocol = .auto, placement: CredentialPlacement? = nil, policy: RoutePolicy? = nil
    ) {
        self.policy = policy
        self.placement = placement
        self.upstreamProtocol = upstreamProtocol
        self.presentsCredentialCertificate = presentsCredentialCertificate
        self.upgrades = upgrades
        self.maxUpgradedLifetime = maxUpgradedLifetime
        self.perRequest = PerRequestSettings.make(exchange: exchange, requested: requested)
        self.intercept = intercept
        self.host = host
        self.upstream = upstream
        self.preserveHost = preserveHost
        self.credential = credential
        self.tls = tls
        self.clientAuthorization = clientAuthorization
    }
}
