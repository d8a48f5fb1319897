import COpenSSL

/// A private key that signs JWS (RFC 7515) through OpenSSL: an RSA key (at least 2048 bits)
/// signs RS256, an EC P-256 key signs ES256 with the raw `r‖s` signature of RFC 7518 §3.4.
///
/// Immutable after creation; OpenSSL allows concurrent signing with one `EVP_PKEY` (each
/// signature gets its own `EVP_MD_CTX`), hence `@unchecked Sendable`.
public final class SigningKey: @unchecked Sendable {
    /// The JWS algorithm a key signs with.
    public enum Algorithm: String, Sendable {
        /// RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256 = "RS256"
        /// ECDSA P-256 with SHA-256.
        case es256 = "ES256"
    }

    let raw: OpaquePointer
    /// The algorithm this key signs with (from its type).
    public let algorithm: Algorithm
    /// A signing context initialised once (SHA-256, this key) that every signature copies:
    /// `EVP_DigestSignInit` looks the algorithms up in OpenSSL's providers each time, which costs
    /// more than the signature itself for a DPoP proof per request. Only ever read (copied)
    /// after init, which OpenSSL allows from any thread. Nil if it could not be made (each
    /// signature then initialises its own).
    private let template: OpaquePointer?

    /// Loads an unencrypted PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`) or traditional
    /// (`BEGIN RSA PRIVATE KEY`, `BEGIN EC PRIVATE KEY`). An encrypted key is refused without
    /// prompting; other key types and curves are refused with the reason.
    public init(pem: [UInt8]) throws(CryptoError) {
        guard let key = PEMPrivateKey.read(pem) else {
            throw CryptoError("not an unencrypted PEM private key (PKCS#8 or traditional RSA/EC)")
        }
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(key)
            guard bits >= 2048 else {
                EVP_PKEY_free(key)
                throw CryptoError("the RSA key has \(bits) bits; RS256 needs at least 2048")
            }
            algorithm = .rs256
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            let group = EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
                ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
            guard group == "prime256v1" || group == "P-256" else {
                EVP_PKEY_free(key)
                throw CryptoError("the EC key is on curve \(group); ES256 needs P-256 (prime256v1)")
            }
            algorithm = .es256
        default:
            EVP_PKEY_free(key)
            throw CryptoError("the key is neither RSA nor EC P-256 (RS256 or ES256)")
        }
        raw = key
        template = SigningKey.makeTemplate(key)
    }

    /// Takes ownership of `key` (freed with this object), which signs with `algorithm`.
    init(owning key: OpaquePointer, algorithm: Algorithm) {
        raw = key
        self.algorithm = algorithm
        template = SigningKey.makeTemplate(key)
    }

    deinit {
        if let template { EVP_MD_CTX_free(template) }
        EVP_PKEY_free(raw)
    }

    private static func makeTemplate(_ key: OpaquePointer) -> OpaquePointer? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            EVP_MD_CTX_free(context)
            return nil
        }
        return context
    }

    /// Signs `message` (SHA-256): PKCS#1 v1.5 for RS256, the 64-byte `r‖s` for ES256.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        let ready = if let template { EVP_MD_CTX_copy_ex(context, template) == 1 } else { false }
        guard ready || EVP_DigestSignInit(context, nil, EVP_sha256(), nil, raw) == 1 else {
            ERR_clear_error()
            throw CryptoError("cannot initialise signing")
        }
        // An ECDSA P-256 DER signature is at most 72 bytes; an RSA one is the modulus size.
        var length = Int(max(EVP_PKEY_get_size(raw), 72))
        let signed: [UInt8]? = message.withUnsafeBytes { input -> [UInt8]? in
            let data = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
            var out = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &out, &length, data, input.count) == 1 else { return nil }
            return Array(out.prefix(length))
        }
        guard let signed else {
            ERR_clear_error()
            throw CryptoError("signing failed")
        }
        return algorithm == .es256 ? try SigningKey.rawECDSASignature(der: signed) : signed
    }

    /// Whether `certificate` holds this key's public half.
    public func matches(_ certificate: X509Certificate) -> Bool {
        let result = X509_check_private_key(certificate.raw, raw) == 1
        ERR_clear_error()
        return result
    }

    /// OpenSSL's DER `ECDSA-Sig-Value` as JWS wants it: `r` and `s`, each left-padded to 32 bytes.
    static func rawECDSASignature(der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else { throw CryptoError("malformed ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var out = [UInt8](repeating: 0, count: 64)
        let written = out.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32),
             BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { throw CryptoError("malformed ECDSA signature") }
        return out
    }
}
