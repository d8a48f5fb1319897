/// Which destinations a route applies to: an exact host name (or IP) and
/// port, or every subdomain of a suffix on a port.
///
/// Text forms: `api.test`, `api.test:8080`, `*.example.com`,
/// `*.example.com:8443`, `[::1]:8080`. No port means 80.
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// The host part of a pattern.
    public enum Kind: Sendable, Hashable {
        /// Exactly this name (lowercased, no trailing dot; IPv6 without brackets).
        case exact(String)
        /// Any name ending in this suffix, stored with its leading dot
        /// (`".example.com"`); the bare suffix itself does not match.
        case suffix(String)
    }

    /// The host part.
    public var kind: Kind
    /// The port the destination must use (80 when the pattern gives none).
    public var port: Int

    /// Creates a pattern from parts. `kind` must already be normalized
    /// (lowercase, no trailing dot, suffix with its leading dot).
    public init(kind: Kind, port: Int = 80) {
        self.kind = kind
        self.port = port
    }

    /// Canonical text, always with the port: `api.test:80`, `*.example.com:8443`, `[::1]:8080`.
    public var description: String {
        switch kind {
        case .exact(let name): return "\(HostSyntax.bracketed(name)):\(port)"
        case .suffix(let suffix): return "*\(suffix):\(port)"
        }
    }

    /// Parses a pattern. Returns a failure (never throws) describing the
    /// first thing wrong: a scheme, path, userinfo, misplaced `*`, empty
    /// label, invalid character or bad port.
    public static func parse(_ text: String) -> Result<HostPattern, PatternError> {
        if text.isEmpty { return .failure(PatternError("host pattern is empty")) }
        if text.contains("://") {
            return .failure(PatternError("host pattern must not have a scheme; write just the host, e.g. api.example.com"))
        }
        if text.contains("/") { return .failure(PatternError("host pattern must not contain a path")) }
        if text.contains("@") { return .failure(PatternError("host pattern must not contain userinfo (user@)")) }
        if text.contains("?") || text.contains("#") {
            return .failure(PatternError("host pattern must not contain a query or fragment"))
        }

        let parts: (host: Substring, isIPv6: Bool, port: Substring?)
        switch HostSyntax.splitHostPort(Substring(text)) {
        case .success(let value): parts = value
        case .failure(let error): return .failure(PatternError(error.message))
        }
        var port = 80
        if let portText = parts.port {
            guard let parsed = HostSyntax.parsePort(portText, range: 1...65535) else {
                return .failure(PatternError("invalid port '\(portText)': expected a number from 1 to 65535"))
            }
            port = parsed
        }
        if parts.isIPv6 {
            return .success(HostPattern(kind: .exact(parts.host.lowercased()), port: port))
        }

        var host = Substring(parts.host.lowercased())
        if host.hasSuffix(".") { host = host.dropLast() }
        if host.hasPrefix("*") {
            guard host.hasPrefix("*.") else {
                return .failure(PatternError("'*' must be followed by '.', as in *.example.com"))
            }
            let suffix = host.dropFirst(2)
            if suffix.isEmpty { return .failure(PatternError("wildcard pattern needs a domain after '*.', as in *.example.com")) }
            if suffix.contains("*") {
                return .failure(PatternError("'*' is only allowed as the whole first label, as in *.example.com"))
            }
            if let problem = HostSyntax.checkName(suffix) { return .failure(PatternError(problem)) }
            return .success(HostPattern(kind: .suffix("." + suffix), port: port))
        }
        if host.contains("*") {
            return .failure(PatternError("'*' is only allowed as the whole first label, as in *.example.com"))
        }
        if let problem = HostSyntax.checkName(host) { return .failure(PatternError(problem)) }
        return .success(HostPattern(kind: .exact(String(host)), port: port))
    }

    /// Whether a destination matches. `host` may be in any case, with a
    /// trailing dot or IPv6 brackets; `port` must already be defaulted by
    /// the caller (80 for plain http).
    public func matches(host: String, port: Int) -> Bool {
        guard port == self.port else { return false }
        return matchesNormalized(host: HostSyntax.normalize(host))
    }

    /// `matches` for a host already passed through `HostSyntax.normalize`,
    /// so `RouteTable` normalizes once per request, not once per pattern.
    func matchesNormalized(host: String) -> Bool {
        switch kind {
        case .exact(let name):
            return host == name
        case .suffix(let suffix):
            // The stored suffix keeps its leading dot, so "example.com" can
            // never match "*.example.com"; requiring a strictly longer host
            // also rejects a degenerate ".example.com" (empty first label).
            let suffixBytes = suffix.utf8
            return host.utf8.count > suffixBytes.count
                && host.utf8.suffix(suffixBytes.count).elementsEqual(suffixBytes)
        }
    }
}
