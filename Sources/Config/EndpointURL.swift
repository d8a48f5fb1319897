/// An http(s) URL of a server the sidecar itself calls, such as a token
/// endpoint: `http(s)://host[:port][/path][?query]`, no userinfo or fragment.
public struct EndpointURL: Sendable, Hashable, CustomStringConvertible {
    /// `"http"` or `"https"`.
    public var scheme: String
    /// The host, lowercased, without a trailing dot; IPv6 without brackets.
    public var host: String
    /// The TCP port (80 for http and 443 for https when the URL gives none).
    public var port: Int
    /// The path as written (percent-escapes kept), starting with `"/"`; `"/"` when the URL has none.
    public var path: String
    /// The query without `?`, when parsed with `allowQuery: true` and present.
    public var query: String?

    /// Creates a URL from parts (not validated).
    public init(scheme: String, host: String, port: Int? = nil, path: String = "/", query: String? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? (scheme == "https" ? 443 : 80)
        self.path = path
        self.query = query
    }

    /// True for `https` URLs.
    public var isTLS: Bool { scheme == "https" }

    /// The `Host` header value: `host[:port]`, IPv6 bracketed, the scheme's default port omitted.
    public var authority: String {
        HostSyntax.authority(host: host, port: port, defaultPort: isTLS ? 443 : 80)
    }

    /// The request target for an HTTP/1.1 request line: the path, plus `?query` when there is one.
    public var requestTarget: String {
        query.map { "\(path)?\($0)" } ?? path
    }

    /// `"https://host:port/path"`, always with the port so the effective value is explicit.
    public var description: String {
        "\(scheme)://\(HostSyntax.bracketed(host)):\(port)\(requestTarget)"
    }

    /// Parses an http or https URL. The path may contain RFC 3986 path
    /// characters and percent-escapes; a query is rejected unless
    /// `allowQuery`; userinfo and fragments are always rejected.
    public static func parse(_ text: String, allowQuery: Bool) -> Result<EndpointURL, AddressError> {
        guard let schemeEnd = text.range(of: "://") else {
            return .failure(AddressError("expected a URL like https://host[:port]/path"))
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            return .failure(AddressError("unsupported scheme '\(scheme)': expected http:// or https://"))
        }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var tail = rest[authorityEnd...]
        if tail.contains("#") { return .failure(AddressError("URL must not have a fragment")) }
        var query: String?
        if let mark = tail.firstIndex(of: "?") {
            guard allowQuery else { return .failure(AddressError("URL must not have a query")) }
            let queryText = tail[tail.index(after: mark)...]
            if let problem = checkCharacters(queryText, extra: "/?", part: "query") { return .failure(AddressError(problem)) }
            query = String(queryText)
            tail = tail[..<mark]
        }
        if let problem = checkCharacters(tail, extra: "/", part: "path") { return .failure(AddressError(problem)) }
        let defaultPort = scheme == "https" ? 443 : 80
        switch HostSyntax.parseAuthority(rest[..<authorityEnd], defaultPort: defaultPort, what: "URL") {
        case .success(let parts):
            return .success(EndpointURL(
                scheme: scheme, host: parts.host, port: parts.port, path: tail.isEmpty ? "/" : String(tail), query: query))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Checks RFC 3986 `pchar`s plus `extra`, with well-formed percent-escapes.
    private static func checkCharacters(_ text: Substring, extra: String, part: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "%" {
                let isHex = { (i: Int) in i < scalars.count && scalars[i].properties.isASCIIHexDigit }
                guard isHex(index + 1), isHex(index + 2) else {
                    return "URL \(part) has a '%' not followed by two hex digits"
                }
                index += 3
                continue
            }
            let allowed = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "-._~!$&'()*+,;=:@".unicodeScalars.contains(scalar) || extra.unicodeScalars.contains(scalar))
            if !allowed {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let shown = scalar.value < 0x21 || scalar.value == 0x7F
                    ? "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex : "'\(scalar)'"
                return "URL \(part) contains \(shown), which must be percent-encoded"
            }
            index += 1
        }
        return nil
    }
}
