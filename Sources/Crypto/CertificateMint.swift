import COpenSSL
import Glibc

/// The OpenSSL steps ``InterceptAuthority`` builds certificates from: key pairs, an unsigned v3
/// certificate, extensions in OpenSSL's configuration syntax, the signature, PEM and DER.
///
/// Every function that returns an OpenSSL object hands over its only reference; on failure it
/// frees what it allocated and clears OpenSSL's error queue.
package enum CertificateMint {
    /// A new P-256 key pair (caller frees with `EVP_PKEY_free`).
    static func newP256Key() throws(CryptoError) -> OpaquePointer {
        guard let key = shim_EVP_EC_gen("P-256") else {
            ERR_clear_error()
            throw CryptoError("cannot generate a P-256 key")
        }
        return key
    }

    /// A new, unsigned X.509 v3 certificate (caller frees with `X509_free`): a random 128-bit
    /// serial, subject CN `commonName` (an empty subject when `nil`), issuer `issuer`'s subject (or the subject itself when
    /// `nil`: self-signed), `publicKey`'s public half, valid from `notBefore` to `notAfter`.
    static func newCertificate(commonName: String?, issuer: OpaquePointer?, publicKey: OpaquePointer,
                               notBefore: time_t, notAfter: time_t) throws(CryptoError) -> OpaquePointer {
        guard let certificate = X509_new() else { throw CryptoError("out of memory") }
        var built = X509_set_version(certificate, 2) == 1 // 2 is v3
        built = built && setRandomSerial(certificate)
        if built, let name = X509_NAME_new() {
            built = (commonName.map { X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, $0, -1, -1, 0) == 1 } ?? true)
                && X509_set_subject_name(certificate, name) == 1
                && X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0) } ?? name) == 1
            X509_NAME_free(name)
        } else {
            built = false
        }
        built = built && X509_set_pubkey(certificate, publicKey) == 1
            && ASN1_TIME_set(X509_getm_notBefore(certificate), notBefore) != nil
            && ASN1_TIME_set(X509_getm_notAfter(certificate), notAfter) != nil
        guard built else {
            X509_free(certificate)
            ERR_clear_error()
            throw CryptoError("cannot build a certificate for \(commonName ?? "an address")")
        }
        return certificate
    }

    /// Adds the extension `nid` with `value` in OpenSSL's configuration syntax (`critical,` first
    /// to mark it critical); `issuer` is the signing certificate (`nil`: self-signed), for key
    /// identifiers.
    static func addExtension(_ nid: Int32, _ value: String, to certificate: OpaquePointer,
                             issuer: OpaquePointer?) throws(CryptoError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
        guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            ERR_clear_error()
            throw CryptoError("cannot make the \(String(cString: OBJ_nid2sn(nid))) extension \(value)")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(certificate, ext, -1) == 1 else {
            ERR_clear_error()
            throw CryptoError("cannot add the \(String(cString: OBJ_nid2sn(nid))) extension")
        }
    }

    /// Signs `certificate` with `key`: ECDSA with SHA-384 for a P-384 key, else SHA-256 (ECDSA
    /// or RSA PKCS#1 v1.5).
    static func sign(_ certificate: OpaquePointer, with key: OpaquePointer) throws(CryptoError) {
        let digest = EVP_PKEY_get_base_id(key) == EVP_PKEY_EC && EVP_PKEY_get_bits(key) == 384 ? EVP_sha384() : EVP_sha256()
        guard X509_sign(certificate, key, digest) > 0 else {
            ERR_clear_error()
            throw CryptoError("cannot sign the certificate")
        }
    }

    /// The certificate as PEM text.
    package static func pem(_ certificate: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, certificate) == 1 else {
            ERR_clear_error()
            return ""
        }
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }

    /// The certificate's DER encoding.
    static func der(_ certificate: OpaquePointer) -> [UInt8] {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509(certificate, &cursor)
        }
        return der
    }

    /// The certificate's notAfter as seconds since the epoch.
    static func notAfter(_ certificate: OpaquePointer) -> time_t? {
        var parts = tm()
        guard let time = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return timegm(&parts)
    }

    /// A random 128-bit serial number.
    private static func setRandomSerial(_ certificate: OpaquePointer) -> Bool {
        guard let number = BN_new() else { return false }
        defer { BN_free(number) }
        guard BN_rand(number, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
              let serial = BN_to_ASN1_INTEGER(number, nil) else { return false }
        defer { ASN1_INTEGER_free(serial) }
        return X509_set_serialNumber(certificate, serial) == 1
    }
}
