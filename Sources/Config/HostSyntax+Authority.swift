extension HostSyntax {
    /// Parses `host[:port]` or `[v6][:port]` as found in a URL or a
    /// `connect.allow` entry: host lowercased, trailing dot dropped, IPv6
    /// without brackets; `defaultPort` nil makes the port required.
    /// `what` names the thing in messages ("upstream URL", "URL").
    static func parseAuthority(_ text: Substring, defaultPort: Int?, what: String) -> Result<(host: String, port: Int), AddressError> {
        if text.contains("@") {
            return .failure(AddressError("\(what) must not contain userinfo (user@)"))
        }
        let parts: (host: Substring, isIPv6: Bool, port: Substring?)
        switch splitHostPort(text) {
        case .success(let value): parts = value
        case .failure(let error): return .failure(error)
        }
        if parts.host.isEmpty { return .failure(AddressError("\(what) has no host")) }
        let port: Int
        if let portText = parts.port {
            guard let parsed = parsePort(portText, range: 1...65535) else {
                return .failure(AddressError("invalid port '\(portText)': expected a number from 1 to 65535"))
            }
            port = parsed
        } else if let defaultPort {
            port = defaultPort
        } else {
            return .failure(AddressError("expected host:port with an explicit port, e.g. example.com:443"))
        }
        var host = String(parts.host).lowercased()
        if !parts.isIPv6 {
            if host.hasSuffix(".") { host.removeLast() }
            if let problem = checkName(Substring(host)) { return .failure(AddressError(problem)) }
        }
        return .success((host, port))
    }

    /// `host:port` with IPv6 bracketed, the port omitted when it is `defaultPort`.
    static func authority(host: String, port: Int, defaultPort: Int?) -> String {
        port == defaultPort ? bracketed(host) : "\(bracketed(host)):\(port)"
    }
}
