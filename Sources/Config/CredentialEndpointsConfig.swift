/// `credentialEndpoints:` (issue 69): one listener, loopback by default, answering the
/// credential endpoints that SDKs already call — the seed SDK's MCA token endpoint, an RFC 6749
/// token endpoint, the GCE metadata server, Azure managed identity and the AWS container
/// credentials endpoint — each handing out its credential's placeholder (or, with
/// `realTokens: true`, the real token), which the proxy swaps on the way out.
public struct CredentialEndpointsConfig: Sendable, Equatable {
    /// Where the endpoints listen (default `127.0.0.1:9902`).
    public var listen: ListenAddress
    /// Whether a listener that is not loopback is allowed (`allowNonLoopback: true`).
    public var allowNonLoopback: Bool
    /// The endpoints configured, in the order of ``CredentialEndpoint/Kind``.
    public var endpoints: [CredentialEndpoint]

    /// The default listener.
    public static let defaultListen = ListenAddress(host: "127.0.0.1", port: 9902)

    /// A section.
    public init(listen: ListenAddress = defaultListen, allowNonLoopback: Bool = false, endpoints: [CredentialEndpoint] = []) {
        self.listen = listen
        self.allowNonLoopback = allowNonLoopback
        self.endpoints = endpoints
    }

    /// The endpoint of `kind`, when configured.
    public func endpoint(_ kind: CredentialEndpoint.Kind) -> CredentialEndpoint? {
        endpoints.first { $0.kind == kind }
    }

    /// Whether `host` (a listen address's) is a loopback literal (a name such as `localhost`
    /// is not: the listener binds addresses).
    public static func isLoopback(_ host: String) -> Bool {
        if host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
