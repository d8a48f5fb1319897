/// Where a token endpoint is: scheme, host, port and request target.
public struct TokenEndpoint: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// `http` or `https` (lowercase).
    public let scheme: String
    /// The host name or IP literal, lowercase, without brackets.
    public let host: String
    /// The TCP port (the scheme's default when the URL has none).
    public let port: Int
    /// The request target in origin form: path (never empty, starts with `/`) plus any query.
    public let path: String

    /// Whether the endpoint needs TLS (`https`).
    public var isTLS: Bool { scheme == "https" }

    /// The `Host` field value: the host (IPv6 in brackets) and the port unless it is the default.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// `scheme://authority/path`, safe to log (URLs with user info are rejected).
    public var description: String { "\(scheme)://\(authority)\(path)" }

    /// Creates an endpoint from parts. `path` must start with `/`.
    public init(scheme: String, host: String, port: Int, path: String) {
        self.scheme = scheme.lowercased()
        self.host = host.lowercased()
        self.port = port
        self.path = path
    }

    /// Parses an absolute `http://` or `https://` URL.
    ///
    /// User info (`user:pass@`) and fragments are rejected, and so are spaces, controls and
    /// non-ASCII bytes in the path (percent-encode them).
    public init(url: String) throws(TokenEndpointError) {
        guard let separator = url.firstRange(of: "://") else { throw .invalidURL("missing scheme (http:// or https://)") }
        let scheme = url[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw .invalidURL("scheme must be http or https") }
        let rest = url[separator.upperBound...]
        let delimiters: Set<Character> = ["/", "?", "#"]
        let authorityEnd = rest.firstIndex(where: { delimiters.contains($0) }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if authority.contains("@") { throw .invalidURL("user info in the URL is not supported; configure the client id and secret") }
        if target.contains("#") { throw .invalidURL("fragment not allowed") }
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidURL("path contains a space, control or non-ASCII character (percent-encode it)")
        }
        let (host, port) = try TokenEndpoint.splitAuthority(authority, defaultPort: scheme == "https" ? 443 : 80)
        self.init(scheme: scheme, host: host, port: port, path: target)
    }

    private static func splitAuthority(_ authority: Substring, defaultPort: Int) throws(TokenEndpointError) -> (String, Int) {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidURL("unterminated IPv6 literal") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalidURL("unexpected characters after IPv6 literal") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw .invalidURL("invalid IPv6 literal")
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw .invalidURL("missing host") }
        if !authority.hasPrefix("[") {
            guard host.utf8.allSatisfy({ ASCIIClass.isHostByte($0) }) else { throw .invalidURL("invalid character in host") }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), let value = Int(portText),
                  (1...65535).contains(value) else { throw .invalidURL("invalid port") }
            port = value
        }
        return (String(host), port)
    }
}

/// Byte classes used when validating URLs.
enum ASCIIClass {
    /// Letters, digits, `-`, `.` and `_` (registered names and IPv4 literals).
    static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F: return true
        default: return false
        }
    }
}
