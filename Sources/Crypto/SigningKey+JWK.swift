import COpenSSL

extension SigningKey {
    /// A new EC P-256 key, in memory only (a DPoP key that is never written anywhere).
    public static func generateP256() throws(CryptoError) -> SigningKey {
        guard let key = shim_EVP_EC_gen("P-256") else {
            ERR_clear_error()
            throw CryptoError("cannot generate a P-256 key")
        }
        return SigningKey(owning: key, algorithm: .es256)
    }

    /// The public key's numbers, as a JWK carries them (RFC 7518 §6.2.1, §6.3.1).
    public enum PublicNumbers: Sendable, Equatable {
        /// A P-256 point: the 32-byte big-endian `x` and `y`.
        case ec(x: [UInt8], y: [UInt8])
        /// An RSA modulus `n` and exponent `e`, unsigned big-endian without leading zeros.
        case rsa(n: [UInt8], e: [UInt8])
    }

    /// The public half's numbers (never a private one).
    public func publicNumbers() throws(CryptoError) -> PublicNumbers {
        switch algorithm {
        case .es256:
            // The uncompressed point 0x04 ‖ X ‖ Y (32 bytes each for P-256).
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            guard EVP_PKEY_get_octet_string_param(raw, "encoded-pub-key", &point, point.count, &length) == 1,
                  length == 65, point[0] == 0x04 else {
                ERR_clear_error()
                throw CryptoError("cannot read the EC public key")
            }
            return .ec(x: Array(point[1...32]), y: Array(point[33...64]))
        case .rs256:
            return .rsa(n: try bigNumber("n"), e: try bigNumber("e"))
        }
    }

    /// The public key as PEM (`BEGIN PUBLIC KEY`), e.g. for a test that verifies a signature.
    public func publicKeyPEM() -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, raw) == 1 else {
            ERR_clear_error()
            return ""
        }
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }

    /// An RSA key's big-number parameter (`n`, `e`) as unsigned big-endian bytes.
    private func bigNumber(_ name: String) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(raw, name, &number) == 1, let number else {
            ERR_clear_error()
            throw CryptoError("cannot read the RSA public key")
        }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        _ = BN_bn2bin(number, &bytes)
        return bytes
    }
}
