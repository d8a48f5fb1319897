import COpenSSL

/// A leaf certificate an ``InterceptAuthority`` minted for one host, with what a TLS server
/// presents beside it: the issuing chain and the leaf's private key. The TLS server context for
/// the host is made from it (`TLSServerContext(leaf:)` in `EventLoop`); the key never leaves
/// OpenSSL.
///
/// Holds a reference of its own to each OpenSSL object (freed on deinit). Immutable after
/// creation and only read afterwards, hence `@unchecked Sendable`.
public final class InterceptLeaf: @unchecked Sendable {
    /// The leaf (`X509*`).
    package let certificate: OpaquePointer
    /// The issuers to send after the leaf, nearest first (`X509*` each).
    package let chain: [OpaquePointer]
    /// The leaf's private key (`EVP_PKEY*`).
    package let key: OpaquePointer

    /// Takes ownership of `certificate`; takes references of its own to `chain` and `key`.
    init(certificate: OpaquePointer, chain: [OpaquePointer], key: OpaquePointer) {
        self.certificate = certificate
        self.chain = chain
        self.key = key
        chain.forEach { X509_up_ref($0) }
        EVP_PKEY_up_ref(key)
    }

    deinit {
        X509_free(certificate)
        chain.forEach { X509_free($0) }
        EVP_PKEY_free(key)
    }

    /// The leaf as PEM (for tests and diagnostics).
    public var certificatePEM: String { CertificateMint.pem(certificate) }
}
