import Config
import EventLoop
import HTTP1
import TokenManager

/// Where one request goes and what it carries: the outcome of routing. Immutable and shared:
/// a route whose target and Host value are the same for every request hands each of them the
/// same decision it built when the configuration loaded (no allocation per request); the rare
/// request that needs another one (a per-request token, its own `Authorization`) gets a copy
/// made with ``with(credential:)`` or ``keepingClientAuthorization()``; a certificate-bound
/// token changes only the exchange's target (``ExchangeIO/target``).
final class RouteDecision: Sendable {
    /// The connection to use (host, port, TLS, pool key); on a route presenting the credential's
    /// certificate, the one without a certificate (the exchange's ``ExchangeIO/target`` is the
    /// one for its token).
    let target: UpstreamTarget
    /// Value for the forwarded `Host` field.
    let hostField: String
    /// The credential whose token is injected, if the route has one (for a route with
    /// per-request tokens, the variant chosen for this request).
    let credential: (any Credential)?
    /// The route's host pattern for logs (`nil` for unrouted forwarding).
    let routeName: String?
    /// Whether a client's own `Authorization` is forwarded instead of injecting (`clientAuthorization: keep`).
    let keepsClientAuthorization: Bool
    /// Set when this request carried its own `Authorization` on a `keep` route: nothing is injected.
    let keptClientAuthorization: Bool
    /// The route's per-request tokens (scopes, audience, token exchange), if it has them.
    let perRequest: RouteTokens?
    /// `clientCertificate: credential`: the upstream connection per certificate the token is bound to.
    let certificateBound: CertificateBoundUpstream?
    /// Which protocols a request may switch to, and for how long (`upgrades`, `maxUpgradedLifetime`).
    let upgrades: UpgradePolicy
    /// Where the token goes when not in the default `Authorization` line (the route's
    /// placement, a placeholder this request carries); nil for the default.
    let injection: CredentialInjection?
    /// What the app may do on this route (`rules:`); nil: anything.
    let policy: RoutePolicy?
    /// How much the app may do (`limits:` of the route and of its credential); nil: no limit.
    let limits: RouteLimits?

    /// A decision; only the router makes them (and tests).
    init(target: UpstreamTarget, hostField: String, credential: (any Credential)?, routeName: String?,
         keepsClientAuthorization: Bool = false, keptClientAuthorization: Bool = false, perRequest: RouteTokens? = nil,
         certificateBound: CertificateBoundUpstream? = nil, upgrades: UpgradePolicy = UpgradePolicy(),
         injection: CredentialInjection? = nil, policy: RoutePolicy? = nil, limits: RouteLimits? = nil) {
        self.policy = policy
        self.limits = limits
        self.upgrades = upgrades
        self.injection = injection
        self.target = target
        self.hostField = hostField
        self.credential = credential
        self.routeName = routeName
        self.keepsClientAuthorization = keepsClientAuthorization
        self.keptClientAuthorization = keptClientAuthorization
        self.perRequest = perRequest
        self.certificateBound = certificateBound
    }

    /// The decision for a request that brings its own `Authorization` to a `keep` route: the
    /// header is forwarded as it is, no token is looked up or injected.
    func keepingClientAuthorization() -> RouteDecision {
        RouteDecision(target: target, hostField: hostField, credential: nil, routeName: routeName,
                      keptClientAuthorization: true, upgrades: upgrades, policy: policy, limits: limits)
    }

    /// This decision for a gRPC call: an `auto` upstream is reached over HTTP/2 only (ALPN `h2`
    /// required), so that the call fails closed rather than going out as HTTP/1.1.
    func requiringHTTP2() -> RouteDecision {
        guard target.http == .negotiated else { return self }
        return copy(target: target.asHTTP2)
    }

    /// This decision injecting `credential`'s tokens instead.
    func with(credential: (any Credential)?) -> RouteDecision {
        copy(credential: .some(credential))
    }

    /// This decision for a request that carries its credential's `placeholder`: the token is
    /// swapped in where the app put it (or, with a placement, written there alone).
    func swapping(placeholder: [UInt8]) -> RouteDecision {
        copy(injection: injection?.carrying(placeholder) ?? CredentialInjection(placement: nil, placeholder: placeholder))
    }

    /// This decision with the parts given changed (the one place a decision is copied).
    private func copy(target: UpstreamTarget? = nil, credential: (any Credential)?? = nil,
                      injection: CredentialInjection? = nil) -> RouteDecision {
        RouteDecision(target: target ?? self.target, hostField: hostField, credential: credential ?? self.credential, routeName: routeName,
                      keepsClientAuthorization: keepsClientAuthorization, keptClientAuthorization: keptClientAuthorization,
                      perRequest: perRequest, certificateBound: certificateBound, upgrades: upgrades, injection: injection ?? self.injection,
                      policy: policy, limits: limits)
    }

    /// What the access log, traces and metrics call where the token went (nil: none injected).
    var placementLabel: String? {
        guard credential != nil else { return nil }
        return injection?.label ?? CredentialPlacement.defaultLabel
    }
}

/// What happened to a request's `Authorization` (the access log's `auth` key).
public enum AuthorizationUse: String, Sendable {
    /// The credential's token was injected (any client `Authorization` dropped).
    case injected

    /// The client's own `Authorization` was forwarded (`clientAuthorization: keep`).
    case kept
    /// A token exchanged for the caller's own (`clientAuthorization: exchange`) was injected.
    case exchanged
    /// Nothing was injected: the route has no credential, or no token could be had.
    case none
}

/// Maps a request's destination to a ``RouteDecision`` using the configured routes.
/// Immutable; one instance is shared by every worker.
final class Router: Sendable {
    private let table: RouteTable
    private let otherHosts: OtherHostsPolicy
    private let connectPolicy: ConnectPolicy
    /// Per route, in the table's order (a lookup yields an index, so nothing is hashed or copied
    /// but the destination's key), everything computed once: its label and credential, and for a
    /// route with an `upstream` or an exact host its connection target (and Host value).
    private let prepared: [PreparedRoute]
    /// Finds credential placeholders in requests; nil when no credential has one (no request
    /// is then looked at).
    let placeholders: PlaceholderScanner?

    /// A class: a decision reads it through one reference instead of copying its fields.
    private final class PreparedRoute: Sendable {
        /// Nil: the request's own destination, made per request (a wildcard or intercepting
        /// route without an upstream).
        let target: UpstreamTarget?
        /// Nil: the request's own authority (``ownHost`` when the route names it exactly).
        let hostField: String?
        /// An exact route's own authority as a request names it, with and without its port
        /// (`Authority.description` of any request it covers is one of the two).
        let ownHost: (withPort: String, bare: String)?
        let label: String
        /// The route's credential, looked up once here rather than by name per request.
        let credential: (any Credential)?
        /// `clientAuthorization: keep`.
        let keepsClientAuthorization: Bool
        /// Tokens fetched per request, if the route has them.
        let perRequest: RouteTokens?
        /// `clientCertificate: credential`.
        let certificateBound: CertificateBoundUpstream?
        /// `preserveHost: true`.
        let preserveHost: Bool
        /// `intercept: true`.
        let intercept: Bool
        /// `upgrades`, `maxUpgradedLifetime`.
        let upgrades: UpgradePolicy
        /// `inject:`, when not the default.
        let injection: CredentialInjection?
        /// `rules:`, when the route has them.
        let policy: RoutePolicy?
        /// `limits:` of the route and of its credential, when there are any.
        let limits: RouteLimits?
        /// An intercepting route without an upstream (a wildcard): the TLS context its requests
        /// reach their own destination with.
        let interceptTLS: (context: TLSClientContext, key: String)?
        /// The decisions every request of this route gets, when its target and Host value do not
        /// depend on the request: for a destination named with its port and without it.
        let fixed: (withPort: RouteDecision, bare: RouteDecision)?

        init(_ route: RouteConfig, target: UpstreamTarget?, hostField: String?, ownHost: (withPort: String, bare: String)? = nil,
             credential: (any Credential)?, perRequest: RouteTokens?, certificateBound: CertificateBoundUpstream?,
             interceptTLS: (context: TLSClientContext, key: String)? = nil, limits: RouteLimits?) {
            self.target = target
            self.limits = limits
            self.hostField = hostField
            self.ownHost = ownHost
            self.label = route.host.description
            self.credential = credential
            self.keepsClientAuthorization = route.clientAuthorization == .keep
            self.perRequest = perRequest
            self.certificateBound = certificateBound
            self.preserveHost = route.preserveHost
            self.intercept = route.intercept
            self.interceptTLS = interceptTLS
            let upgrades = UpgradePolicy(route)
            self.upgrades = upgrades
            let injection = route.placement.map { CredentialInjection(placement: $0) }
            self.injection = injection
            self.policy = route.policy
            func decision(_ hostField: String) -> RouteDecision? {
                target.map {
                    RouteDecision(target: $0, hostField: hostField, credential: credential, routeName: route.host.description,
                                  keepsClientAuthorization: route.clientAuthorization == .keep, perRequest: perRequest,
                                  certificateBound: certificateBound, upgrades: upgrades, injection: injection, policy: route.policy,
                                  limits: limits)
                }
            }
            if route.preserveHost {
                fixed = nil
            } else if let hostField, let shared = decision(hostField) {
                fixed = (shared, shared)
            } else if let ownHost, let withPort = decision(ownHost.withPort), let bare = decision(ownHost.bare) {
                fixed = (withPort, bare)
            } else {
                fixed = nil
            }
        }
    }

    /// A router without routes, for a ``LocalServer`` (whose requests are never routed).
    init() {
        table = RouteTable([])
        otherHosts = .deny
        connectPolicy = .deny
        prepared = []
        placeholders = nil
    }

    /// Builds the router; throws when a route's TLS files cannot be used. `limiters` keeps the
    /// state of limits a reload leaves as they were.
    init(config: SidecarConfig, credentials: CredentialSet, limiters: LimiterRegistry = LimiterRegistry()) throws {
        self.table = RouteTable(config.routes)
        self.otherHosts = config.otherHosts
        self.connectPolicy = config.connectPolicy
        self.placeholders = PlaceholderScanner(credentials.placeholders)
        // One TLS context per distinct TLS setting of https upstreams.
        var contexts: [String: TLSClientContext] = [:]
        var prepared: [PreparedRoute] = []
        // Each distinct pool key of a fixed target numbered once (``UpstreamTarget/poolKeyIndex``).
        var keyIndexes: [String: Int] = [:]
        func interned(_ target: UpstreamTarget) -> UpstreamTarget {
            var target = target
            if let index = keyIndexes[target.poolKey] {
                target.poolKeyIndex = index
            } else {
                target.poolKeyIndex = keyIndexes.count
                keyIndexes[target.poolKey] = keyIndexes.count
            }
            return target
        }
        for route in table.routes {
            let perRequest = Router.perRequest(route, credentials)
            if route.clientAuthorization == .exchange, route.credential != nil, perRequest == nil {
                // Never forward a caller's own token because its exchange is missing.
                throw RouterError("routes '\(route.host)': the token exchange of this route was not built")
            }
            let credential = route.credential.flatMap { credentials[$0] }
            let credentialLimits = route.credential.flatMap { name in config.credentials.first { $0.name == name }?.limits }
            let limits = RouteLimits.make(
                route: route.limits.map { limiters.limiter(Self.limitScope(route: route), $0) },
                credential: credentialLimits.map { limiters.limiter(Self.limitScope(credential: route.credential ?? ""), $0) },
                enforced: (route.policy?.enforcement ?? config.enforcement) == .enforce)
            guard let upstream = route.upstream else {
                // An exact host always goes to that very host: its target is the same for
                // every request (the request's own authority stays its Host).
                var target: UpstreamTarget?
                var ownHost: (withPort: String, bare: String)?
                if !route.intercept, case .exact(let name) = route.host.kind {
                    target = interned(Router.plainTarget(name, route.host.port))
                    let bare = Authority(host: name, port: nil).description
                    ownHost = (Authority(host: name, port: route.host.port).description, bare)
                }
                var interceptTLS: (context: TLSClientContext, key: String)?
                if route.intercept && route.host.port != 80 {  // port 80: plaintext, as the app sent it
                    let key = Router.tlsKey(route.tls)
                    if contexts[key] == nil {
                        contexts[key] = try TLSClientContext(caFile: route.tls.caFile, clientCert: route.tls.clientCert,
                                                             clientKey: route.tls.clientKey,
                                                             insecureSkipVerify: route.tls.insecureSkipVerify)
                    }
                    interceptTLS = (contexts[key]!, key)
                }
                prepared.append(PreparedRoute(route, target: target, hostField: nil, ownHost: ownHost, credential: credential,
                                              perRequest: perRequest, certificateBound: nil, interceptTLS: interceptTLS, limits: limits))
                continue
            }
            // The ALPN a route's TLS offers: h2 only (h2), both (auto), none (http1). Contexts
            // are kept apart by it (a resumed session carries the protocol it agreed on).
            let http: UpstreamHTTP
            let alpn: [String]
            switch route.upstreamProtocol {
            case .h2, .h2c: (http, alpn) = (.h2, ["h2"])
            case .auto where upstream.isTLS: (http, alpn) = (.negotiated, ["h2", "http/1.1"])
            case .auto, .http1: (http, alpn) = (.http1, [])
            }
            let key = Router.tlsKey(route.tls) + (alpn.isEmpty ? "" : "|" + alpn.joined(separator: ","))
            var tls: TLSClientContext?
            if upstream.isTLS {
                if contexts[key] == nil {
                    contexts[key] = try TLSClientContext(caFile: route.tls.caFile, clientCert: route.tls.clientCert,
                                                         clientKey: route.tls.clientKey,
                                                         insecureSkipVerify: route.tls.insecureSkipVerify, alpn: alpn)
                }
                tls = contexts[key]
            }
            let poolKey = "\(upstream.scheme)|\(upstream.host)|\(upstream.port)|\(key)"
            var made = UpstreamTarget(host: upstream.host, port: upstream.port, tls: tls, poolKey: poolKey, allowsLinkLocal: true)
            made.http = http
            let target = interned(made)
            let bound = route.presentsCredentialCertificate && upstream.isTLS
                ? CertificateBoundUpstream(base: target, caFile: route.tls.caFile, insecureSkipVerify: route.tls.insecureSkipVerify)
                : nil
            prepared.append(PreparedRoute(route, target: target, hostField: upstream.authority, credential: credential,
                                          perRequest: perRequest, certificateBound: bound, limits: limits))
        }
        self.prepared = prepared
    }

    /// What a route's limiter is called (refusals, status page, metrics).
    static func limitScope(route: RouteConfig) -> String { "route \(route.host.description)" }

    /// What a credential's limiter is called.
    static func limitScope(credential: String) -> String { "credential \(credential)" }

    /// The scopes of every limit of `config` (a reload forgets the others).
    static func limitScopes(_ config: SidecarConfig) -> Set<String> {
        var scopes = Set(config.routes.filter { $0.limits != nil }.map { limitScope(route: $0) })
        for credential in config.credentials where credential.limits != nil { scopes.insert(limitScope(credential: credential.name)) }
        return scopes
    }

    /// The per-request tokens of `route`, if it has them.
    private static func perRequest(_ route: RouteConfig, _ credentials: CredentialSet) -> RouteTokens? {
        guard let variants = credentials.routeVariants[route.host.description] else { return nil }
        return RouteTokens(variants: variants, exchanges: route.clientAuthorization == .exchange,
                           scopeHeader: route.requested?.scopeHeader, allowedScopes: route.requested?.allowedScopes ?? [],
                           audienceHeader: route.requested?.audienceHeader,
                           allowedAudiences: route.requested?.allowedAudiences ?? [])
    }

    private static func tlsKey(_ tls: TLSSettings) -> String {
        "\(tls.caFile ?? "")|\(tls.clientCert ?? "")|\(tls.clientKey ?? "")|\(tls.insecureSkipVerify)"
    }

    /// Decides where `head` goes, or the error to answer with.
    func decide(_ head: RequestHead) -> Result<RouteDecision, ProxyError> {
        let destination: Authority
        switch head.target {
        case .absolute(let scheme, let authority, _):
            guard scheme == "http" else {
                return .failure(.badRequest("https:// request targets are not supported: send http:// URLs; token-sidecar originates TLS to configured https upstreams"))
            }
            destination = authority
        case .origin, .asterisk:
            guard let host = head.host else {
                return .failure(.badRequest("the request has no Host field and no absolute URL, so it has no destination"))
            }
            destination = host
        case .authority:
            return .failure(.connectNotAllowed())
        }
        let host = destination.host
        let port = destination.port(default: 80)
        // An Authority's host is normalized already.
        if let index = table.index(normalizedHost: host, port: port) {
            return .success(decision(prepared[index], destination, host: host, port: port))
        }
        switch otherHosts {
        case .deny:
            return .failure(.denied("no route is configured for \(destination.description); add one under `routes:` or set `otherHosts: forward`"))
        case .forward:
            return .success(RouteDecision(target: Router.plainTarget(host, port), hostField: destination.description,
                                          credential: nil, routeName: nil))
        }
    }

    private static func tlsTarget(_ host: String, _ port: Int, _ tls: (context: TLSClientContext, key: String)) -> UpstreamTarget {
        UpstreamTarget(host: host, port: port, tls: tls.context, poolKey: "https|\(host)|\(port)|\(tls.key)", allowsLinkLocal: false)
    }

    private static func plainTarget(_ host: String, _ port: Int) -> UpstreamTarget {
        UpstreamTarget(host: host, port: port, tls: nil, poolKey: "http|\(host)|\(port)|", allowsLinkLocal: false)
    }

    /// Whether requests for `authority` (the port defaults to `defaultPort`) may go to an
    /// HTTP/2 upstream (`upstreamProtocol: h2` or `h2c`, or `auto` to an https upstream: a gRPC
    /// call there requires `h2`); nil when no route covers it.
    func sendsHTTP2(_ authority: Authority, defaultPort: Int) -> Bool? {
        guard let index = table.index(normalizedHost: authority.host, port: authority.port(default: defaultPort)) else { return nil }
        return prepared[index].target.map { $0.http == .h2 || $0.http == .negotiated } ?? false
    }

    /// Whether a CONNECT to `authority` is answered by terminating TLS (a route with
    /// `intercept: true` covers it); the port defaults to 443.
    func intercepts(_ authority: Authority) -> Bool {
        table.route(host: authority.host, port: authority.port(default: 443))?.intercept ?? false
    }

    /// Whether the intercepting route for `authority` sends its requests over TLS: an app that
    /// speaks TLS inside its tunnel is refused by a route with an `http://` upstream (allowed on
    /// port 80 only, for `ws://` and `http://` URLs), which would be weaker than the app's own
    /// connection.
    func interceptsOverTLS(_ authority: Authority) -> Bool {
        guard let route = table.route(host: authority.host, port: authority.port(default: 443)) else { return false }
        return route.upstream?.isTLS ?? (route.host.port != 80)
    }

    /// Decides where a request read inside an intercepted tunnel to `origin` goes: only to that
    /// origin (anything else is `421 Misdirected Request`), through its intercepting route.
    /// `serverName`: the SNI the app sent in its handshake (a different name is misdirected too).
    /// `secure`: the app speaks TLS in the tunnel (else plaintext HTTP, as for a `ws://` URL).
    func decide(_ head: RequestHead, intercepted origin: InterceptedOrigin, serverName: String?,
                secure: Bool = true) -> Result<RouteDecision, ProxyError> {
        if let serverName, Self.normalizedServerName(serverName) != origin.host {
            return .failure(.misdirected(origin, "\(serverName) (its TLS server name)"))
        }
        let destination: Authority
        switch head.target {
        case .absolute(let scheme, let authority, _):
            guard scheme == (secure ? "https" : "http") else { return .failure(.misdirected(origin, "an \(scheme):// URL")) }
            destination = authority
        case .origin, .asterisk:
            guard let host = head.host else {
                return .failure(.badRequest("the request has no Host field, so it has no destination"))
            }
            destination = host
        case .authority:
            return .failure(.connectNotAllowed())
        }
        guard destination.host == origin.host, destination.port(default: origin.port) == origin.port else {
            return .failure(.misdirected(origin, destination.description))
        }
        guard let index = table.index(normalizedHost: origin.host, port: origin.port), prepared[index].intercept else {
            // The route went away with a reload while the tunnel stayed open.
            return .failure(.misdirected(origin, destination.description))
        }
        return .success(decision(prepared[index], destination, host: origin.host, port: origin.port))
    }

    /// The decision for a request to `destination` (`host`, `port`: its normalized parts) that
    /// the prepared route `ready` covers: its upstream, or the destination itself — over
    /// verified TLS for an intercepting route on a TLS port (also reached with a plain http://
    /// URL: its token never goes out in clear), plain otherwise (an intercepting route on port
    /// 80 sends as the app would have: its token goes in clear, as on any http:// route).
    @inline(__always)
    private func decision(_ ready: PreparedRoute, _ destination: Authority, host: String, port: Int) -> RouteDecision {
        if let fixed = ready.fixed { return destination.port == nil ? fixed.bare : fixed.withPort }
        let hostField: String
        if ready.preserveHost {
            hostField = destination.description
        } else if let fixed = ready.hostField {
            hostField = fixed
        } else if let own = ready.ownHost {
            hostField = destination.port == nil ? own.bare : own.withPort
        } else {
            hostField = destination.description
        }
        let target = ready.target
            ?? ready.interceptTLS.map { Router.tlsTarget(host, port, $0) } ?? Router.plainTarget(host, port)
        return RouteDecision(target: target, hostField: hostField, credential: ready.credential,
                             routeName: ready.label, keepsClientAuthorization: ready.keepsClientAuthorization,
                             perRequest: ready.perRequest, certificateBound: ready.certificateBound, upgrades: ready.upgrades,
                             injection: ready.injection, policy: ready.policy, limits: ready.limits)
    }

    /// An SNI name as hosts are compared: lowercase, without one trailing dot.
    private static func normalizedServerName(_ name: String) -> String {
        let lowered = name.lowercased()
        return lowered.hasSuffix(".") ? String(lowered.dropLast()) : lowered
    }

    /// Where a CONNECT tunnel may go: only to authorities listed under `connect: allow`.
    func tunnelDecision(for authority: Authority) -> Result<(host: String, port: Int), ProxyError> {
        guard case .allow(let allowed) = connectPolicy else {
            return .failure(.connectDenied("CONNECT is not allowed: send plain http:// URLs through token-sidecar — it originates TLS to the backend itself"))
        }
        guard let port = authority.port, allowed.contains(authority.description.lowercased()) else {
            return .failure(.connectDenied("CONNECT to \(authority.description) is not allowed: it is not listed under `connect: allow`; send plain http:// URLs through token-sidecar instead"))
        }
        return .success((authority.host, port))
    }
}

/// A configuration the router cannot serve safely.
struct RouterError: Error, CustomStringConvertible {
    /// What is wrong, naming the route.
    let description: String
    init(_ description: String) { self.description = description }
}
