/// A client certificate and its private key as PEM files (resolved paths, readable at load),
/// used by the MCA certificate flow to sign its `IMFCert` assertion.
public struct ClientCertificateFiles: Sendable, Equatable {
    /// `clientCert`: the PEM certificate whose DER goes into the JWS `x5c` header.
    public var certificate: String
    /// `clientKey`: the certificate's RSA private key (PEM), which signs RS256.
    public var key: String

    /// Creates the pair.
    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}
