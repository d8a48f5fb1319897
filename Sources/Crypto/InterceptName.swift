import COpenSSL
import Glibc

/// A name the interception CA is constrained to, or a leaf is minted for: a DNS name, a
/// wildcard (`*.example.com`, only as a constraint), or an IPv4/IPv6 literal (brackets allowed).
///
/// Parsing is strict because the names end up in OpenSSL's extension configuration syntax
/// (`DNS:…`, `IP:…`, comma-separated): only letters, digits, `-`, `_` and `.` pass for DNS names,
/// so nothing can inject another entry.
enum InterceptName: Equatable {
    /// A lowercase DNS name.
    case dns(String)
    /// `*.suffix`: any name below `suffix` (lowercase), not `suffix` itself.
    case wildcard(suffix: String)
    /// An IPv4 literal in canonical text form.
    case ipv4(String)
    /// An IPv6 literal in canonical text form (no brackets).
    case ipv6(String)

    /// Parses `text`; throws a message naming it when it is none of the above.
    init(_ text: String) throws(CryptoError) {
        var name = text
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if let canonical = InterceptName.canonicalAddress(name, family: AF_INET) {
            self = .ipv4(canonical)
        } else if let canonical = InterceptName.canonicalAddress(name, family: AF_INET6) {
            self = .ipv6(canonical)
        } else if name.hasPrefix("*.") {
            let suffix = String(name.dropFirst(2)).lowercased()
            guard InterceptName.isDNSName(suffix) else { throw CryptoError("not a valid wildcard name: \(text)") }
            self = .wildcard(suffix: suffix)
        } else {
            let lower = name.lowercased()
            guard InterceptName.isDNSName(lower) else { throw CryptoError("not a valid host name or IP address: \(text)") }
            self = .dns(lower)
        }
    }

    /// The subjectAltName entry of a leaf for this name (a wildcard is not minted as such);
    /// critical for an address, whose leaf has an empty subject (RFC 5280 §4.2.1.6).
    var subjectAltName: String {
        switch self {
        case .dns(let name): "DNS:\(name)"
        case .wildcard(let suffix): "DNS:*.\(suffix)"
        case .ipv4(let address), .ipv6(let address): "critical,IP:\(address)"
        }
    }

    /// The subject CN of a leaf for this name: the name, at most 64 characters (the X.509 upper
    /// bound). `nil` for an address: OpenSSL checks a CN that looks like a host name
    /// (`10.0.0.7` does) against a CA's DNS name constraints when the leaf has no DNS SAN, so
    /// an address CN would fail every CA constrained to DNS names and addresses alike.
    var commonName: String? {
        switch self {
        case .dns(let name): String(name.prefix(64))
        case .wildcard(let suffix): String("*.\(suffix)".prefix(64))
        case .ipv4, .ipv6: nil
        }
    }

    /// A name of 1…253 characters, labels of 1…63 letters, digits, `-` or `_`, not starting or
    /// ending with `-`.
    private static func isDNSName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        guard !utf8.isEmpty, utf8.count <= 253 else { return false }
        let labels = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            guard (1...63).contains(label.count), label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else { return false }
            return label.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        }
    }

    /// `text` re-printed by `inet_ntop` when `inet_pton` accepts it for `family`.
    private static func canonicalAddress(_ text: String, family: Int32) -> String? {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(family, text, &bytes) == 1 else { return nil }
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, bytes, &out, socklen_t(out.count)) != nil else { return nil }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
