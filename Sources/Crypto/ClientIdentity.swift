import COpenSSL

/// A TLS client certificate chain and its private key as read at one moment (PEM bytes), with
/// the SHA-256 of the leaf (RFC 8705 §3.1's `x5t#S256` is its base64url form). A token
/// bound to the certificate is presented over connections made with exactly these bytes, even
/// after the files changed.
///
/// Immutable; compared by contents.
public final class ClientIdentity: Sendable, Equatable {
    /// The certificate chain, leaf first (PEM).
    public let certificatePEM: [UInt8]
    /// The private key (PEM). Never logged.
    package let keyPEM: [UInt8]
    /// SHA-256 of the leaf certificate's DER (its base64url form is the `x5t#S256` thumbprint).
    public let leafSHA256: [UInt8]

    /// Parses the pair; throws naming which one is unusable, or a key that does not match.
    public init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(CryptoError) {
        let leaf = try X509Certificate(pem: certificatePEM)
        guard let key = PEMPrivateKey.read(keyPEM) else { throw CryptoError("no unencrypted PEM private key found") }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(leaf.raw, key) == 1 else {
            throw CryptoError("the key does not match the certificate (\(CryptoError.openSSLErrors()))")
        }
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
        leafSHA256 = Digest.sha256(leaf.der)
    }

    /// Whether these are exactly the bytes it was read from.
    public func holds(certificatePEM: [UInt8], keyPEM: [UInt8]) -> Bool {
        self.certificatePEM == certificatePEM && self.keyPEM == keyPEM
    }

    /// Same certificate and key bytes.
    public static func == (lhs: ClientIdentity, rhs: ClientIdentity) -> Bool {
        lhs.certificatePEM == rhs.certificatePEM && lhs.keyPEM == rhs.keyPEM
    }
}
