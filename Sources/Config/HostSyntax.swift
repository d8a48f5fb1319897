#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Shared syntax checks for host names, IP literals and ports, used by
/// `HostPattern`, `UpstreamAddress` and `ListenAddress`.
enum HostSyntax {
    /// Lowercases ASCII letters and strips surrounding IPv6 brackets and one
    /// trailing dot. Returns the input unchanged (no allocation) when it is
    /// already normal, which is the common case on the request path.
    static func normalize(_ host: String) -> String {
        let utf8 = host.utf8
        let needsWork = utf8.last == 0x2E || utf8.first == 0x5B
            || utf8.contains { $0 >= 0x41 && $0 <= 0x5A }
        guard needsWork else { return host }
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = text.dropFirst().dropLast()
        }
        if text.hasSuffix(".") {
            text = text.dropLast()
        }
        return text.lowercased()
    }

    /// Parses a decimal port without sign or spaces. Returns nil when it is
    /// not a number or lies outside `range`.
    static func parsePort(_ text: Substring, range: ClosedRange<Int>) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = Int(text), range.contains(port)
        else { return nil }
        return port
    }

    /// Checks a DNS name or IPv4 literal (already lowercased, no trailing
    /// dot). Returns a message describing the first thing wrong, or nil.
    static func checkName(_ name: Substring) -> String? {
        if name.isEmpty { return "host name is empty" }
        if name.utf8.count > 253 { return "host name is longer than 253 characters" }
        // All digits and dots: it must be a well-formed IPv4 address, so that
        // a typo like "127.0.0.1.1" is not silently taken as a DNS name.
        if name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }) {
            return isIPv4(name) ? nil : "'\(name)' is not a valid IPv4 address"
        }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "host name '\(name)' has an empty label" }
            if label.utf8.count > 63 { return "host name label '\(label)' is longer than 63 characters" }
            for scalar in label.unicodeScalars {
                let ok = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
                    || (scalar >= "0" && scalar <= "9") || scalar == "-" || scalar == "_"
                if !ok { return "host name '\(name)' contains the invalid character '\(scalar)'" }
            }
        }
        return nil
    }

    /// True for a dotted-quad IPv4 address with each part 0...255.
    static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        return parts.allSatisfy { part in
            part.utf8.count >= 1 && part.utf8.count <= 3
                && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                && (Int(part) ?? 256) <= 255
        }
    }

    /// True for an IPv6 literal (without brackets), as accepted by `inet_pton`.
    static func isIPv6(_ text: Substring) -> Bool {
        var address = in6_addr()
        return String(text).withCString { inet_pton(AF_INET6, $0, &address) } == 1
    }

    /// Splits `host[:port]` or `[v6][:port]` into host (brackets removed,
    /// lowercased) and the optional port text. Returns a message on a
    /// malformed bracket or an unbracketed IPv6 address.
    static func splitHostPort(_ text: Substring) -> Result<(host: Substring, isIPv6: Bool, port: Substring?), AddressError> {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                return .failure(AddressError("missing ']' after IPv6 address"))
            }
            let host = text[text.index(after: text.startIndex)..<close]
            guard isIPv6(host) else {
                return .failure(AddressError("'\(host)' is not a valid IPv6 address"))
            }
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return .success((host, true, nil)) }
            guard rest.hasPrefix(":") else {
                return .failure(AddressError("unexpected text after ']'"))
            }
            return .success((host, true, rest.dropFirst()))
        }
        guard let colon = text.lastIndex(of: ":") else {
            return .success((text, false, nil))
        }
        let host = text[..<colon]
        if host.contains(":") {
            return .failure(AddressError("IPv6 addresses must be written in brackets, e.g. [::1]:8080"))
        }
        return .success((host, false, text[text.index(after: colon)...]))
    }

    /// Formats a host for use in `host:port` text, bracketing IPv6 literals.
    static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
