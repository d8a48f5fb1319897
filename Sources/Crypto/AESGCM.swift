import COpenSSL

/// AES-256-GCM through OpenSSL's EVP interface (OpenSSL is reached only from this module).
///
/// OpenSSL is already linked for TLS and hashing, so sealing cached tokens needs no new
/// dependency. Nonces are 96 bits, tags 128 bits.
public enum AESGCM {
    /// Key length in bytes.
    public static let keyLength = 32
    /// Nonce length in bytes.
    public static let nonceLength = 12
    /// Authentication tag length in bytes.
    public static let tagLength = 16

    /// `ciphertext || tag` of `plaintext` under `key` and `nonce`, authenticating `additionalData`
    /// too; nil when the key or nonce has the wrong length or OpenSSL fails.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, nonce.count == nonceLength, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var length: Int32 = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return nil }
        if !additionalData.isEmpty {
            guard EVP_EncryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else { return nil }
        }
        var written = 0
        if !plaintext.isEmpty {
            let ok = out.withUnsafeMutableBufferPointer { buffer in
                EVP_EncryptUpdate(context, buffer.baseAddress, &length, plaintext, Int32(plaintext.count))
            }
            guard ok == 1 else { return nil }
            written = Int(length)
        }
        let finished = out.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard finished == 1, written + Int(length) == plaintext.count else { return nil }
        let tagged = out.withUnsafeMutableBufferPointer { buffer in
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), buffer.baseAddress! + plaintext.count)
        }
        return tagged == 1 ? out : nil
    }

    /// The plaintext of `sealed` (`ciphertext || tag`), or nil when it does not authenticate
    /// under `key`, `nonce` and `additionalData` (a wrong key, tampering, a truncated value).
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, nonce.count == nonceLength, sealed.count >= tagLength,
              let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let cipherLength = sealed.count - tagLength
        var tag = Array(sealed[cipherLength...])
        var out = [UInt8](repeating: 0, count: cipherLength + tagLength)
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return nil }
        if !additionalData.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else { return nil }
        }
        var written = 0
        if cipherLength > 0 {
            let ok = sealed.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { buffer in
                    EVP_DecryptUpdate(context, buffer.baseAddress, &length, input.baseAddress, Int32(cipherLength))
                }
            }
            guard ok == 1 else { return nil }
            written = Int(length)
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else { return nil }
        let verified = out.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard verified == 1 else { return nil }
        return Array(out[..<cipherLength])
    }

    /// `count` bytes from OpenSSL's CSPRNG (for nonces and instance ids); nil if it fails.
    public static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        return ok == 1 ? bytes : nil
    }
}
