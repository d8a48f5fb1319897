/// The authority of a request (RFC 9110 §4.2 / RFC 3986 §3.2): a host and an optional port.
///
/// `host` is ASCII-lowercased, has no trailing dot, and an IPv6 literal is stored without its
/// brackets. Userinfo is never accepted (RFC 9110 §4.2.4 deprecates it for http(s)).
public struct Authority: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased host name, IPv4 address, or IPv6 address (no brackets).
    public var host: String
    /// The explicit port, if one was given.
    public var port: Int?

    /// Creates an authority from already-normalized parts (no validation).
    public init(host: String, port: Int?) {
        self.host = host
        self.port = port
    }

    /// Parses `name`, `name:port`, `1.2.3.4:80` or `[::1]:8080`.
    ///
    /// Returns nil for userinfo (`a@b`), an empty host, a port that is empty, not all digits or
    /// outside 1...65535, or any host character other than letters, digits, `-`, `.`, `_`, `~`
    /// (a deliberately strict subset of RFC 3986 reg-name), or more than one trailing dot. One
    /// trailing dot is removed.
    public static func parse(_ text: Substring) -> Authority? {
        var copy = text
        return copy.withUTF8 { parse(UnsafeRawBufferPointer($0), 0..<$0.count) }
    }

    /// Parses an authority; see ``parse(_:)-(Substring)``.
    public static func parse(_ text: String) -> Authority? {
        text.withUTF8InPlace { parse(UnsafeRawBufferPointer($0), 0..<$0.count) }
    }

    /// `port ?? defaultPort`.
    public func port(default defaultPort: Int) -> Int {
        port ?? defaultPort
    }

    /// `host`, `host:port`, or `[v6]:port` for IPv6 literals.
    public var description: String {
        let h = host.utf8.contains(ASCII.colon) ? "[" + host + "]" : host
        if let port { return h + ":" + String(port) }
        return h
    }

    /// Byte-level parser used by the head parsers (no intermediate Strings).
    static func parse(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> Authority? {
        var i = range.lowerBound
        let end = range.upperBound
        guard i < end else { return nil }
        var hostRange: Range<Int>
        if buf[i] == 0x5B {  // '[' IP-literal; only IPv6 (no IPvFuture)
            i += 1
            let start = i
            var colons = 0
            while i < end, buf[i] != 0x5D {
                let b = buf[i]
                if b == ASCII.colon {
                    colons += 1
                } else if ASCII.hexValue(b) == nil && b != 0x2E {
                    return nil
                }
                i += 1
            }
            guard i < end, colons >= 2, i > start else { return nil }
            hostRange = start..<i
            i += 1  // ']'
        } else {
            let start = i
            while i < end, buf[i] != ASCII.colon {
                // Strict reg-name / IPv4: ALPHA DIGIT - . _ ~ (this also rejects '@' userinfo).
                guard ASCII.isHostByte(buf[i]) else { return nil }
                i += 1
            }
            hostRange = start..<i
            if hostRange.count > 0, buf[hostRange.upperBound - 1] == 0x2E {  // FQDN trailing dot
                hostRange = hostRange.lowerBound..<(hostRange.upperBound - 1)
                // Only one: a host that still ends in a dot would lose another one each time it
                // is serialized and parsed again (`a..` → `a.` → `a`).
                if hostRange.count > 0, buf[hostRange.upperBound - 1] == 0x2E { return nil }
            }
            guard !hostRange.isEmpty else { return nil }
        }
        var port: Int?
        if i < end {
            guard buf[i] == ASCII.colon else { return nil }
            i += 1
            let digits = end - i
            guard digits >= 1, digits <= 5 else { return nil }
            var value = 0
            while i < end {
                let b = buf[i]
                guard ASCII.isDigit(b) else { return nil }
                value = value * 10 + Int(b &- 0x30)
                i += 1
            }
            guard value >= 1, value <= 65535 else { return nil }
            port = value
        }
        return Authority(host: ASCII.lowercasedString(buf, hostRange), port: port)
    }
}
