import Config
import HTTP1
import TokenManager

/// Where one request goes and what it carries: the outcome of routing.
struct RouteDecision {
    /// Host to connect to (name or numeric, no brackets).
    let upstreamHost: String
    /// Port to connect to.
    let upstreamPort: Int
    /// Value for the forwarded `Host` field.
    let hostField: String
    /// The credential whose token is injected, if the route has one.
    let credential: (any Credential)?
    /// Pool key: connections are reused only for the same destination.
    let poolKey: String
    /// The route's host pattern for logs (`nil` for unrouted forwarding).
    let routeName: String?
}

/// Maps a request's destination to a ``RouteDecision`` using the configured routes.
/// Immutable; one instance is shared by every worker.
struct Router: Sendable {
    private let table: RouteTable
    private let otherHosts: OtherHostsPolicy
    private let credentials: CredentialSet

    init(config: SidecarConfig, credentials: CredentialSet) {
        self.table = RouteTable(config.routes)
        self.otherHosts = config.otherHosts
        self.credentials = credentials
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
        if let route = table.route(host: host, port: port) {
            let credential = route.credential.flatMap { credentials[$0] }
            if let upstream = route.upstream {
                let hostField = route.preserveHost ? destination.description : upstream.authority
                return .success(RouteDecision(
                    upstreamHost: upstream.host, upstreamPort: upstream.port, hostField: hostField,
                    credential: credential, poolKey: "\(upstream.host)|\(upstream.port)",
                    routeName: route.host.description))
            }
            return .success(RouteDecision(
                upstreamHost: host, upstreamPort: port, hostField: destination.description,
                credential: credential, poolKey: "\(host)|\(port)", routeName: route.host.description))
        }
        switch otherHosts {
        case .deny:
            return .failure(.denied("no route is configured for \(destination.description); add one under `routes:` or set `otherHosts: forward`"))
        case .forward:
            return .success(RouteDecision(
                upstreamHost: host, upstreamPort: port, hostField: destination.description,
                credential: nil, poolKey: "\(host)|\(port)", routeName: nil))
        }
    }
}
