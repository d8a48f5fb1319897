/// Where a route's requests are sent instead of the requested destination.
/// Only `http://host[:port]` is supported for now.
public struct UpstreamAddress: Sendable, Hashable, CustomStringConvertible {
    /// The URL scheme, always `"http"` for now.
    public var scheme: String
    /// The host, lowercased; IPv6 without brackets.
    public var host: String
    /// The TCP port (80 when the URL gives none).
    public var port: Int

    /// Creates an address from parts.
    public init(scheme: String = "http", host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// The value to send as `Host` when the route does not preserve the
    /// original one: `host:port`, IPv6 bracketed, `:80` omitted for http.
    public var authority: String {
        let host = HostSyntax.bracketed(self.host)
        return scheme == "http" && port == 80 ? host : "\(host):\(port)"
    }

    /// `"http://host:port"`, always with the port so the effective value is explicit.
    public var description: String {
        "\(scheme)://\(HostSyntax.bracketed(host)):\(port)"
    }

    /// Parses `http://host[:port][/]`. Rejects other schemes (with a
    /// dedicated message for https), userinfo, paths other than `/`,
    /// queries and fragments.
    public static func parse(_ text: String) -> Result<UpstreamAddress, AddressError> {
        guard let schemeEnd = text.range(of: "://") else {
            return .failure(AddressError("expected a URL like http://host:port"))
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "http": break
        case "https": return .failure(AddressError("https upstreams are not supported yet"))
        default: return .failure(AddressError("unsupported scheme '\(scheme)': only http:// upstreams are supported"))
        }
        var rest = text[schemeEnd.upperBound...]
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            let tail = rest[end...]
            if tail.contains("?") { return .failure(AddressError("upstream URL must not have a query")) }
            if tail.contains("#") { return .failure(AddressError("upstream URL must not have a fragment")) }
            if tail != "/" {
                return .failure(AddressError("upstream URL must not have a path (got '\(tail)'); requests keep their own path"))
            }
            rest = rest[..<end]
        }
        if rest.contains("@") {
            return .failure(AddressError("upstream URL must not contain userinfo (user@)"))
        }
        let parts: (host: Substring, isIPv6: Bool, port: Substring?)
        switch HostSyntax.splitHostPort(rest) {
        case .success(let value): parts = value
        case .failure(let error): return .failure(error)
        }
        if parts.host.isEmpty { return .failure(AddressError("upstream URL has no host")) }
        var port = 80
        if let portText = parts.port {
            guard let parsed = HostSyntax.parsePort(portText, range: 1...65535) else {
                return .failure(AddressError("invalid port '\(portText)': expected a number from 1 to 65535"))
            }
            port = parsed
        }
        var host = String(parts.host).lowercased()
        if !parts.isIPv6 {
            if host.hasSuffix(".") { host.removeLast() }
            if let problem = HostSyntax.checkName(Substring(host)) { return .failure(AddressError(problem)) }
        }
        return .success(UpstreamAddress(scheme: "http", host: host, port: port))
    }
}
