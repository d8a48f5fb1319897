/// The request-target of a request line (RFC 9112 §3.2).
public enum RequestTarget: Sendable, Equatable, Hashable {
    /// origin-form: `/path?query`, exactly as sent.
    case origin(String)
    /// absolute-form (used with proxies). `scheme` is lowercased and is `http` or `https`;
    /// `path` is the origin-form equivalent (`/` when empty, query kept).
    case absolute(scheme: String, authority: Authority, path: String)
    /// authority-form, only for CONNECT; the port is always present.
    case authority(Authority)
    /// asterisk-form, only for `OPTIONS *`.
    case asterisk

    /// The default port for a scheme (`80` for http, `443` for https).
    public static func defaultPort(scheme: String) -> Int {
        scheme.utf8.count == 5 && scheme == "https" ? 443 : 80  // (the length first: a cheap mismatch)
    }

    /// The target as it would be written in origin-form to the next hop: the path for
    /// absolute-form, `*` for asterisk-form, `host:port` for authority-form.
    public var originFormString: String {
        switch self {
        case .origin(let path): return path
        case .absolute(_, _, let path): return path
        case .authority(let authority): return authority.description
        case .asterisk: return "*"
        }
    }
}
