/// A Redis address: `redis://host[:port][/db]` or `rediss://host[:port][/db]` (TLS).
///
/// Credentials in the URL (`redis://user:pass@host`) are refused: they would end up in logs and
/// in the rendered configuration; `passwordFile` and `usernameFile` hold them instead.
public struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// Whether the connection uses TLS (`rediss://`).
    public var isTLS: Bool
    /// Host name or IP address (without brackets).
    public var host: String
    /// TCP port (default 6379).
    public var port: Int
    /// Database number for `SELECT` (default 0).
    public var database: Int

    /// Creates an address.
    public init(isTLS: Bool = false, host: String, port: Int = 6379, database: Int = 0) {
        self.isTLS = isTLS
        self.host = host
        self.port = port
        self.database = database
    }

    /// `redis://host:port/db`, IPv6 hosts bracketed.
    public var description: String {
        "\(isTLS ? "rediss" : "redis")://\(HostSyntax.bracketed(host)):\(port)/\(database)"
    }

    /// Parses `text`, or fails with a message that may quote it (URLs here carry no secret).
    static func parse(_ text: String) -> Result<RedisURL, ProblemMessage> {
        let usage = "expected redis://host:port/db or rediss://host:port/db"
        var isTLS = false
        var rest: Substring
        if text.hasPrefix("redis://") {
            rest = text.dropFirst("redis://".count)
        } else if text.hasPrefix("rediss://") {
            isTLS = true
            rest = text.dropFirst("rediss://".count)
        } else {
            return .failure(ProblemMessage("\(usage), got '\(text)'"))
        }
        if rest.contains("@") {
            return .failure(ProblemMessage("must not contain credentials; use passwordFile (and usernameFile)"))
        }
        if rest.contains("?") || rest.contains("#") {
            return .failure(ProblemMessage("\(usage) (no query or fragment), got '\(text)'"))
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard let number = Int(path), (0...15_999).contains(number) else {
                    return .failure(ProblemMessage("the database after the host must be a number such as /0, got '/\(path)'"))
                }
                database = number
            }
        }
        switch HostSyntax.parseAuthority(rest, defaultPort: 6379, what: "URL") {
        case .success(let parts):
            return .success(RedisURL(isTLS: isTLS, host: parts.host, port: parts.port, database: database))
        case .failure(let error):
            return .failure(ProblemMessage("\(error.message) in '\(text)'"))
        }
    }
}
