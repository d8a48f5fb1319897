import COpenSSL

/// Reading an unencrypted PEM private key (PKCS#8 or traditional RSA/EC) into an `EVP_PKEY`,
/// for the callers that then check the key's type for their use (``SigningKey``,
/// ``InterceptAuthority``).
package enum PEMPrivateKey {
    /// The key (the caller frees it), or nil when `pem` holds none or an encrypted one — never a
    /// passphrase prompt on the terminal. OpenSSL's error queue is cleared on failure.
    package static func read(_ pem: [UInt8]) -> OpaquePointer? {
        let loaded: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            // The callback refuses any passphrase.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil)
        }
        if loaded == nil { ERR_clear_error() }
        return loaded
    }
}
