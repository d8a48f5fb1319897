/// Routing table built once from the configured routes and queried per request.
///
/// Precedence: an exact `host:port` match wins; otherwise the longest
/// matching suffix pattern on that port; otherwise nil.
public struct RouteTable: Sendable {
    /// Key for exact lookups; a struct rather than a `"host:port"` string so
    /// a lookup does not build a new string per request.
    private struct ExactKey: Hashable, Sendable {
        var host: String
        var port: Int
    }

    private let exact: [ExactKey: RouteConfig]
    /// Suffix routes, longest suffix first; equal lengths keep file order.
    private let suffixes: [RouteConfig]

    /// The routes the table was built from, in the order given.
    public let routes: [RouteConfig]

    /// Builds the table. If two routes have the same exact pattern (the
    /// loader rejects that) the first one wins.
    public init(_ routes: [RouteConfig]) {
        self.routes = routes
        var exact: [ExactKey: RouteConfig] = [:]
        var suffixes: [(length: Int, order: Int, route: RouteConfig)] = []
        for (order, route) in routes.enumerated() {
            switch route.host.kind {
            case .exact(let name):
                let key = ExactKey(host: name, port: route.host.port)
                if exact[key] == nil { exact[key] = route }
            case .suffix(let suffix):
                suffixes.append((suffix.utf8.count, order, route))
            }
        }
        self.exact = exact
        self.suffixes = suffixes
            .sorted { $0.length != $1.length ? $0.length > $1.length : $0.order < $1.order }
            .map(\.route)
    }

    /// The route for a destination, or nil. `host` may be in any case, with
    /// a trailing dot or IPv6 brackets; `port` must already be defaulted.
    public func route(host: String, port: Int) -> RouteConfig? {
        route(normalizedHost: HostSyntax.normalize(host), port: port)
    }

    /// The route for a destination whose `host` is normalized already (lowercase, no trailing
    /// dot, IPv6 without brackets: an `Authority`'s host), or nil.
    public func route(normalizedHost host: String, port: Int) -> RouteConfig? {
        if let route = exact[ExactKey(host: host, port: port)] {
            return route
        }
        for route in suffixes where route.host.port == port && route.host.matchesNormalized(host: host) {
            return route
        }
        return nil
    }
}
