import JSON

/// How a credential's current token is presented, for `/tokens` and the status page: its
/// `Authorization` scheme and what it is bound to, by public thumbprints only (never a key).
public struct TokenBindingReport: Sendable, Equatable {
    /// `Bearer` or `DPoP`.
    public var tokenType: String
    /// The DPoP key's RFC 7638 thumbprint (`cnf.jkt`), for a DPoP token.
    public var jkt: String?
    /// The client certificate's SHA-256 thumbprint (`cnf.x5t#S256`), for a certificate-bound token.
    public var certificateThumbprint: String?

    /// Creates a report.
    public init(tokenType: String, jkt: String? = nil, certificateThumbprint: String? = nil) {
        self.tokenType = tokenType
        self.jkt = jkt
        self.certificateThumbprint = certificateThumbprint
    }

    /// The JSON members (`tokenType`, and `jkt` / `x5t#S256` when bound).
    var members: [(String, JSONValue)] {
        [("tokenType", .string(tokenType))]
            + (jkt.map { [("jkt", JSONValue.string($0))] } ?? [])
            + (certificateThumbprint.map { [("x5t#S256", JSONValue.string($0))] } ?? [])
    }

    /// `DPoP · jkt …` for the status page's token column.
    var summary: String {
        var parts = [tokenType]
        if let jkt { parts.append("jkt \(jkt)") }
        if let certificateThumbprint { parts.append("x5t#S256 \(certificateThumbprint)") }
        return parts.joined(separator: " · ")
    }
}
