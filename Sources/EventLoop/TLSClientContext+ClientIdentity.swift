import COpenSSL
import Crypto

extension TLSClientContext {
    /// A context that presents `identity` and verifies servers as `caFile` /
    /// `insecureSkipVerify` say (the upstream of a route whose tokens are bound to the
    /// credential's certificate), offering `alpn`.
    public convenience init(caFile: String?, identity: ClientIdentity, insecureSkipVerify: Bool,
                            alpn: [String] = []) throws(EventLoopError) {
        try self.init(caFile: caFile, insecureSkipVerify: insecureSkipVerify, alpn: alpn)
        do {
            try Self.use(certificatePEM: identity.certificatePEM, keyPEM: identity.keyPEM, in: raw)
        } catch {
            throw .system("cannot use the client certificate: \(error)")
        }
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
            throw CryptoError("the key does not match the certificate (\(CryptoError.openSSLErrors()))")
        }
    }
}
