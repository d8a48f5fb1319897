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

    /// Exact patterns to their route's index in ``routes``.
    private let exact: [ExactKey: Int]
    /// The same, as a list, when it is short enough that comparing each pattern costs less
    /// than hashing the destination (a port, then usually a small string's raw bits).
    private let exactList: [(key: ExactKey, index: Int)]?
    /// Up to this many exact patterns are searched in order instead of hashed.
    public static let maxScannedExact = 8
    /// Indices of the suffix routes, longest suffix first; equal lengths keep file order.
    private let suffixes: [Int]

    /// The routes the table was built from, in the order given.
    public let routes: [RouteConfig]

    /// Builds the table. If two routes have the same exact pattern (the
    /// loader rejects that) the first one wins.
    public init(_ routes: [RouteConfig]) {
        self.routes = routes
        var exact: [ExactKey: Int] = [:]
        var suffixes: [(length: Int, order: Int)] = []
        for (order, route) in routes.enumerated() {
            switch route.host.kind {
            case .exact(let name):
                let key = ExactKey(host: name, port: route.host.port)
                if exact[key] == nil { exact[key] = order }
            case .suffix(let suffix):
                suffixes.append((suffix.utf8.count, order))
            }
        }
        self.exact = exact
        self.exactList = exact.count <= Self.maxScannedExact ? exact.map { ($0.key, $0.value) }.sorted { $0.index < $1.index } : nil
        self.suffixes = suffixes
            .sorted { $0.length != $1.length ? $0.length > $1.length : $0.order < $1.order }
            .map(\.order)
    }

    /// The route for a destination, or nil. `host` may be in any case, with
    /// a trailing dot or IPv6 brackets; `port` must already be defaulted.
    public func route(host: String, port: Int) -> RouteConfig? {
        index(normalizedHost: HostSyntax.normalize(host), port: port).map { routes[$0] }
    }

    /// The index in ``routes`` of the route for a destination whose `host` is normalized
    /// already (lowercase, no trailing dot, IPv6 without brackets: an `Authority`'s host), or
    /// nil. What the proxy looks up per request: no route is copied.
    public func index(normalizedHost host: String, port: Int) -> Int? {
        if let exactList {
            for entry in exactList where entry.key.port == port && entry.key.host == host { return entry.index }
        } else if let index = exact[ExactKey(host: host, port: port)] {
            return index
        }
        for index in suffixes where routes[index].host.port == port && routes[index].host.matchesNormalized(host: host) {
            return index
        }
        return nil
    }
}
