import COpenSSL

/// An X.509 certificate read through OpenSSL: its DER encoding (for a JWS `x5c` header) and
/// its subject's common name.
///
/// Immutable after creation, hence `@unchecked Sendable`.
public final class X509Certificate: @unchecked Sendable {
    let raw: OpaquePointer
    /// The DER encoding.
    public let der: [UInt8]
    /// The subject's CN (UTF-8), if it has one.
    public let commonName: String?

    /// Loads the first certificate of a PEM file's contents.
    public init(pem: [UInt8]) throws(CryptoError) {
        let loaded: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let certificate = loaded else {
            ERR_clear_error()
            throw CryptoError("not a PEM certificate")
        }
        raw = certificate
        let length = i2d_X509(certificate, nil)
        var der = [UInt8](repeating: 0, count: max(0, Int(length)))
        if length > 0 {
            der.withUnsafeMutableBufferPointer { buffer in
                var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                _ = i2d_X509(certificate, &cursor)
            }
        }
        self.der = der
        commonName = X509Certificate.subjectCommonName(certificate)
    }

    deinit { X509_free(raw) }

    private static func subjectCommonName(_ certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { CRYPTO_free(utf8, nil, 0) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }
}
