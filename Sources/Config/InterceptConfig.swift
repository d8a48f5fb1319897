/// `intercept:` — the certificate authority the sidecar terminates TLS with for routes marked
/// `intercept: true` (apps that keep their `https://` URLs and set `HTTPS_PROXY`).
public struct InterceptConfig: Sendable, Equatable {
    /// The CA certificate apps must trust. Without ``caKeyFile`` the sidecar generates a new CA
    /// at every start and writes its certificate here; with it, the operator's certificate is read.
    public var caCertFile: String
    /// An operator-provided CA key (PEM); nil: a CA is generated in memory (its key never
    /// touches disk).
    public var caKeyFile: String?
    /// Where to write the system CAs plus this CA (one file for `SSL_CERT_FILE`); nil: none.
    public var bundleFile: String?
    /// Validity of a generated CA (re-generated at every start anyway).
    public var caValidity: Duration

    /// Creates the section.
    public init(caCertFile: String, caKeyFile: String? = nil, bundleFile: String? = nil,
                caValidity: Duration = .seconds(30 * 24 * 3600)) {
        self.caCertFile = caCertFile
        self.caKeyFile = caKeyFile
        self.bundleFile = bundleFile
        self.caValidity = caValidity
    }
}
