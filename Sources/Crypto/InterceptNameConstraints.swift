/// The Name Constraints extension of a generated interception CA: closed for both name types a
/// TLS client matches a host against, so that even a stolen CA key vouches for nothing outside
/// the intercepting routes.
///
/// RFC 5280 §4.2.1.10 applies constraints per name type: a `permitted` list of DNS subtrees
/// says nothing about IP addresses, and the other way round. So each type is closed on its own:
/// - **DNS names:** each route's name is a `permitted` subtree (a wildcard `*.example.com` as
///   `.example.com`, subdomains only, as OpenSSL, Go and NSS read a leading dot). An exact name
///   also permits the names below it (RFC 5280 has no form for one name alone; excluding
///   `.name` would need the leading dot, which pyca/cryptography's verifier refuses as malformed
///   and would then refuse every leaf). With no DNS route the only permitted subtree is
///   `invalid`, a top-level domain reserved never to resolve (RFC 6761 §6.4): the empty
///   `excluded` dNSName the CA/Browser Forum names has no meaning in RFC 5280, OpenSSL's
///   configuration syntax cannot write it and pyca/cryptography calls it malformed, where a
///   permitted subtree is read the same way by every verifier.
/// - **IP addresses**, per family: each route's address is `permitted` as a single address
///   (/32, /128); a family without a route is `excluded` whole (`0.0.0.0/0`, `::/0`).
///
/// The subject CN is not a third type: clients that still read it as a host name (OpenSSL, when
/// a leaf has no DNS SAN) check it against the DNS constraints.
struct InterceptNameConstraints: Equatable {
    /// The DNS subtree permitted when no route has a DNS name: RFC 6761's `.invalid`.
    static let closedDNSSubtree = "invalid"

    /// The subtrees in OpenSSL's configuration syntax (`permitted;DNS:…`, `excluded;IP:…/…`),
    /// DNS first, then IPv4, then IPv6.
    let entries: [String]

    /// The constraints for `names` (at least one; duplicates are harmless).
    init(_ names: [InterceptName]) {
        var permittedDNS: [String] = [], ipv4: [String] = [], ipv6: [String] = []
        for name in names {
            switch name {
            case .dns(let host):
                permittedDNS.append("permitted;DNS:\(host)")
            case .wildcard(let suffix):
                permittedDNS.append("permitted;DNS:.\(suffix)")
            case .ipv4(let address):
                ipv4.append("permitted;IP:\(address)/255.255.255.255")
            case .ipv6(let address):
                ipv6.append("permitted;IP:\(address)/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
            }
        }
        if permittedDNS.isEmpty { permittedDNS = ["permitted;DNS:\(Self.closedDNSSubtree)"] }
        if ipv4.isEmpty { ipv4 = ["excluded;IP:0.0.0.0/0.0.0.0"] }
        if ipv6.isEmpty { ipv6 = ["excluded;IP:::/::"] }
        entries = Self.unique(permittedDNS) + Self.unique(ipv4) + Self.unique(ipv6)
    }

    /// The extension's value for `X509V3_EXT_conf_nid`: critical, as RFC 5280 requires.
    var extensionValue: String { "critical," + entries.joined(separator: ",") }

    /// `list` without repeats, in first-seen order.
    private static func unique(_ list: [String]) -> [String] {
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }
    }
}
