/// How to verify (and authenticate to) a TLS server: a token endpoint or an
/// https upstream. File paths are resolved at load (relative ones against
/// the config file's directory) and were readable PEM files then.
public struct TLSSettings: Sendable, Hashable {
    /// A PEM bundle of CA certificates to trust instead of the system store; nil uses the system store.
    public var caFile: String?
    /// A PEM client certificate for mutual TLS; set together with `clientKey`.
    public var clientCert: String?
    /// The PEM private key of `clientCert` (unencrypted); set together with `clientCert`.
    public var clientKey: String?
    /// Skip server certificate and host name verification (testing only).
    public var insecureSkipVerify: Bool

    /// Creates settings; every parameter defaults to the loader's default.
    public init(caFile: String? = nil, clientCert: String? = nil, clientKey: String? = nil, insecureSkipVerify: Bool = false) {
        self.caFile = caFile
        self.clientCert = clientCert
        self.clientKey = clientKey
        self.insecureSkipVerify = insecureSkipVerify
    }

    /// System trust store, no client certificate, full verification.
    public static let `default` = TLSSettings()
}
