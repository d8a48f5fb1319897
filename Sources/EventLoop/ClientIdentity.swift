import CLibevent

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
    let keyPEM: [UInt8]
    /// SHA-256 of the leaf certificate's DER (its base64url form is the `x5t#S256` thumbprint).
    public let leafSHA256: [UInt8]

    /// Parses the pair; throws naming which one is unusable, or a key that does not match.
    public init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(CryptoError) {
        let leaf = try X509Certificate(pem: certificatePEM)
        // Loading both into a context checks that the key belongs to the certificate.
        try TLSClientContext.checkPair(certificatePEM: certificatePEM, keyPEM: keyPEM)
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

extension TLSClientContext {
    /// A context that presents `identity` and verifies servers as `caFile` /
    /// `insecureSkipVerify` say (the upstream of a route whose tokens are bound to the
    /// credential's certificate).
    public convenience init(caFile: String?, identity: ClientIdentity, insecureSkipVerify: Bool) throws(EventLoopError) {
        try self.init(caFile: caFile, insecureSkipVerify: insecureSkipVerify)
        do {
            try Self.use(certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, in: raw)
        } catch {
            throw .system("cannot use the client certificate: \(error)")
        }
    }

    /// Throws unless the pair loads into a context (the key fits the certificate).
    static func checkPair(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(CryptoError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw CryptoError("SSL_CTX_new failed") }
        defer { SSL_CTX_free(ctx) }
        try use(certificatePEM: certificatePEM, keyPEM: keyPEM, in: ctx)
    }

    /// Loads the chain (leaf first) and the key into `ctx`.
    static func use(certificatePEM: [UInt8], keyPEM: [UInt8], in ctx: OpaquePointer) throws(CryptoError) {
        var certificates: [OpaquePointer] = []
        defer { certificates.forEach { X509_free($0) } }
        certificatePEM.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return }
            defer { BIO_free(bio) }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
        }
        ERR_clear_error()  // the end of the PEM data leaves a "no start line" error
        guard let leaf = certificates.first else { throw CryptoError("no PEM certificate found") }
        guard let key = PEMPrivateKey.read(keyPEM) else { throw CryptoError("no unencrypted PEM private key found") }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_certificate(ctx, leaf) == 1,
              certificates.dropFirst().allSatisfy({ shim_SSL_CTX_add1_chain_cert(ctx, $0) == 1 }),
              SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw CryptoError("the key does not match the certificate (\(TLSClientContext.lastError()))")
        }
    }
}
