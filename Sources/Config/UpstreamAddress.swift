/// Where a route's requests are sent instead of the requested destination:
/// `http://host[:port]` or `https://host[:port]`.
public struct UpstreamAddress: Sendable, Hashable, CustomStringConvertible {
    /// The URL scheme, `"http"` or `"https"`.
    public var scheme: String
    /// The host, lowercased; IPv6 without brackets.
    public var host: String
    /// The TCP port (80 for http and 443 for https when the URL gives none).
    public var port: Int

    /// Creates an address from parts.
    public init(scheme: String = "http", host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// True for `https` upstreams, which the proxy reaches over TLS.
    public var isTLS: Bool { scheme == "https" }

    /// The value to send as `Host` when the route does not preserve the
    /// original one: `host:port`, IPv6 bracketed, `:80` omitted for http and
    /// `:443` for https.
    public var authority: String {
        HostSyntax.authority(host: host, port: port, defaultPort: isTLS ? 443 : 80)
    }

    /// `"http://host:port"`, always with the port so the effective value is explicit.
    public var description: String {
        "\(scheme)://\(HostSyntax.bracketed(host)):\(port)"
    }

    /// Parses `http://host[:port][/]` or `https://host[:port][/]`. Rejects
    /// other schemes, userinfo, paths other than `/`, queries and fragments.
    public static func parse(_ text: String) -> Result<UpstreamAddress, AddressError> {
        guard let schemeEnd = text.range(of: "://") else {
            return .failure(AddressError("expected a URL like http://host:port"))
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return .failure(AddressError("unsupported scheme '\(scheme)': only http:// and https:// upstreams are supported"))
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
        switch HostSyntax.parseAuthority(rest, defaultPort: defaultPort, what: "upstream URL") {
        case .success(let parts): return .success(UpstreamAddress(scheme: scheme, host: parts.host, port: parts.port))
        case .failure(let error): return .failure(error)
        }
    }
}
