import Crypto
import EventLoop

/// Which variant of a credential's token a request needs: the scopes and audience it asked
/// for, and for token exchange the caller's subject — only as a SHA-256, never the token.
public struct TokenVariantKey: Sendable, Hashable, CustomStringConvertible {
    /// The requested scopes, sorted and space-separated without duplicates (nil: the default).
    public let scope: String?
    /// The requested audience (nil: the default).
    public let audience: String?
    /// The SHA-256 (hex) of the subject token to exchange, nil for the client's own token.
    public let subjectDigest: String?

    /// A key for `scopes` (order and duplicates ignored; empty means the default), `audience`
    /// and the SHA-256 of `subject`.
    public init(scopes: [Substring] = [], audience: String? = nil, subject: String? = nil) {
        let unique = Set(scopes.map(String.init)).sorted()
        scope = unique.isEmpty ? nil : unique.joined(separator: " ")
        self.audience = audience
        subjectDigest = subject.map { Digest.sha256Hex($0) }
    }

    /// `scope=read write, audience=…, subject=sha256:1a2b3c4d` — safe to show.
    public var description: String {
        var parts: [String] = []
        if let scope { parts.append("scope=\(scope)") }
        if let audience { parts.append("audience=\(audience)") }
        if let subjectDigest { parts.append("subject=sha256:\(subjectDigest.prefix(8))") }
        return parts.isEmpty ? "default" : parts.joined(separator: ", ")
    }
}
