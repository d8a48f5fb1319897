import COpenSSL
import Glibc

/// The certificate authority HTTPS interception signs leaf certificates with: generated in
/// memory at start (P-256, name-constrained to the intercepted names) or provided by the operator.
///
/// The private key stays inside this object: nothing exports it, as PEM or otherwise; only the
/// certificate (``certificatePEM``) and its ``fingerprint`` leave.
///
/// `@unchecked Sendable`: every stored property is immutable after init, and the OpenSSL objects
/// (CA certificate, CA key, leaf key) are only read afterwards — signing with an `EVP_PKEY` and
/// using an `X509` as an issuer are safe from several threads at once.
public final class InterceptAuthority: @unchecked Sendable {
    /// The CA certificate (`X509*`, owned).
    private let certificate: OpaquePointer
    /// The CA private key (`EVP_PKEY*`, owned). Never exported.
    private let key: OpaquePointer
    /// The one P-256 key every leaf of this authority carries (`EVP_PKEY*`, owned).
    ///
    /// One leaf key per authority rather than one per leaf: a mint then costs exactly one
    /// signature (the budget for the loop), and per-leaf keys would buy no separation —
    /// every leaf key lives in the same process memory as the CA key, for the same lifetime
    /// (a new authority, hence a new leaf key, at every start).
    private let leafKey: OpaquePointer
    /// When the CA certificate expires (seconds since the epoch); no leaf outlives it.
    private let notAfter: time_t
    /// Whether the CA certificate has a subjectKeyIdentifier (leaves then name it in their
    /// authorityKeyIdentifier; otherwise they name the CA's issuer and serial).
    private let hasKeyIdentifier: Bool

    /// The CA certificate as PEM (the certificate only, never the key): what clients must trust.
    public let certificatePEM: String
    /// The SHA-256 of the CA certificate's DER encoding, lowercase hex (for logs).
    public let fingerprint: String
    /// Whether the CA certificate carries a Name Constraints extension (a generated CA always
    /// does; without one, an operator CA can vouch for any host name or address).
    public let isNameConstrained: Bool
    /// When the CA certificate expires (seconds since the epoch); leaves never outlive it.
    public var expiresAt: Int { Int(notAfter) }
    /// Seconds until the CA certificate expires (negative once it has).
    public var secondsLeft: Int { Int(notAfter - time(nil)) }

    /// How far back `notBefore` is set, for clients whose clock runs slow.
    static let clockSkew: time_t = 3600
    /// The CA certificate's subject CN.
    static let commonName = "token-sidecar interception CA"

    /// Takes ownership of `certificate` and `key` (freed here even when this throws).
    private init(certificate: OpaquePointer, key: OpaquePointer) throws(CryptoError) {
        guard let notAfter = CertificateMint.notAfter(certificate), let leafKey = try? CertificateMint.newP256Key() else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw CryptoError("cannot read the CA certificate's validity, or generate a leaf key")
        }
        self.certificate = certificate
        self.key = key
        self.leafKey = leafKey
        self.notAfter = notAfter
        hasKeyIdentifier = X509_get0_subject_key_id(certificate) != nil
        isNameConstrained = X509_get_ext_by_NID(certificate, NID_name_constraints, -1) >= 0
        certificatePEM = CertificateMint.pem(certificate)
        fingerprint = Digest.hex(Digest.sha256(CertificateMint.der(certificate)))
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
        EVP_PKEY_free(leafKey)
    }

    /// Generates a new CA in memory: a P-256 key pair and a self-signed X.509 v3 certificate
    /// (CN "token-sidecar interception CA", CA:TRUE with path length 0, keyCertSign and cRLSign)
    /// whose critical Name Constraints permit only `permittedNames` — `api.example.com` (and, as
    /// RFC 5280 has it, the names below it), `*.example.com` as the subtree `.example.com` (subdomains only), IPv4/IPv6
    /// literals as single addresses — and close every name type without a route
    /// (``InterceptNameConstraints``), so even a stolen key signs for nothing else.
    /// Valid from an hour ago (clock skew) for `validity`.
    public static func generate(permittedNames: [String],
                                validity: Duration = .seconds(30 * 24 * 3600)) throws(CryptoError) -> InterceptAuthority {
        var names: [InterceptName] = []
        for text in permittedNames {
            let name = try InterceptName(text)
            if !names.contains(name) { names.append(name) }
        }
        guard !names.isEmpty else {
            throw CryptoError("a generated interception CA needs at least one permitted name")
        }
        guard validity > .zero else { throw CryptoError("the interception CA's validity must be positive") }
        let key = try CertificateMint.newP256Key()
        let now = time(nil)
        let certificate: OpaquePointer
        do {
            certificate = try CertificateMint.newCertificate(commonName: commonName, issuer: nil, publicKey: key,
                                                             notBefore: now - clockSkew,
                                                             notAfter: now + time_t(validity.components.seconds))
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        do {
            try CertificateMint.addExtension(NID_basic_constraints, "critical,CA:TRUE,pathlen:0", to: certificate, issuer: nil)
            try CertificateMint.addExtension(NID_key_usage, "critical,keyCertSign,cRLSign", to: certificate, issuer: nil)
            try CertificateMint.addExtension(NID_subject_key_identifier, "hash", to: certificate, issuer: nil)
            try CertificateMint.addExtension(NID_name_constraints, InterceptNameConstraints(names).extensionValue,
                                             to: certificate, issuer: nil)
            try CertificateMint.sign(certificate, with: key)
        } catch {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw error
        }
        return try InterceptAuthority(certificate: certificate, key: key)
    }

    /// Loads an operator-provided CA: the first certificate of `certificatePEM` and the
    /// unencrypted private key `keyPEM` (EC P-256 or P-384, or RSA of at least 2048 bits).
    /// Throws with the reason when the certificate is not a CA (basicConstraints CA:TRUE), may
    /// not sign certificates (keyUsage without keyCertSign), or the key does not match it.
    /// Error messages never contain key material.
    public convenience init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(CryptoError) {
        let parsed = try X509Certificate(pem: certificatePEM)
        let flags = X509_get_extension_flags(parsed.raw)
        guard flags & UInt32(EXFLAG_CA) != 0 else {
            throw CryptoError("the interception CA certificate is not a CA (it needs basicConstraints CA:TRUE)")
        }
        guard flags & UInt32(EXFLAG_KUSAGE) == 0 || X509_get_key_usage(parsed.raw) & UInt32(KU_KEY_CERT_SIGN) != 0 else {
            throw CryptoError("the interception CA certificate may not sign certificates (its keyUsage lacks keyCertSign)")
        }
        let key = try InterceptAuthority.loadKey(keyPEM)
        guard X509_check_private_key(parsed.raw, key) == 1 else {
            ERR_clear_error()
            EVP_PKEY_free(key)
            throw CryptoError("the interception CA key does not match its certificate")
        }
        X509_up_ref(parsed.raw)
        try self.init(certificate: parsed.raw, key: key)
    }

    /// Mints a leaf certificate for `host` (a DNS name, or an IPv4/IPv6 literal, brackets
    /// allowed): a leaf certificate with subject CN `host` (at most 64 characters) and SAN
    /// `DNS:host` — for an address, an empty subject and a critical SAN `IP:host` instead (see
    /// `InterceptName.commonName` for why) — CA:FALSE, digitalSignature, serverAuth, a random
    /// serial, valid from an hour ago for `validity` but never past the CA's own expiry, to be
    /// presented with the CA certificate (``InterceptLeaf/chain``). Costs one signature.
    public func mintLeaf(for host: String, validity: Duration = .seconds(7 * 24 * 3600)) throws(CryptoError) -> InterceptLeaf {
        let name = try InterceptName(host)
        if case .wildcard = name { throw CryptoError("a leaf is minted for a host name, not a wildcard: \(host)") }
        guard validity > .zero else { throw CryptoError("a leaf certificate's validity must be positive") }
        let now = time(nil)
        guard notAfter > now else { throw CryptoError("the interception CA certificate has expired") }
        let leaf = try CertificateMint.newCertificate(commonName: name.commonName, issuer: certificate,
                                                      publicKey: leafKey, notBefore: now - InterceptAuthority.clockSkew,
                                                      notAfter: min(now + time_t(validity.components.seconds), notAfter))
        // The leaf owns `leaf` from here: freed with it, also when a step below throws.
        let minted = InterceptLeaf(certificate: leaf, chain: [certificate], key: leafKey)
        try CertificateMint.addExtension(NID_basic_constraints, "critical,CA:FALSE", to: leaf, issuer: certificate)
        try CertificateMint.addExtension(NID_key_usage, "critical,digitalSignature", to: leaf, issuer: certificate)
        try CertificateMint.addExtension(NID_ext_key_usage, "serverAuth", to: leaf, issuer: certificate)
        try CertificateMint.addExtension(NID_subject_alt_name, name.subjectAltName, to: leaf, issuer: certificate)
        try CertificateMint.addExtension(NID_authority_key_identifier, hasKeyIdentifier ? "keyid:always" : "issuer:always",
                                         to: leaf, issuer: certificate)
        try CertificateMint.sign(leaf, with: key)
        return minted
    }

    /// The curve of an EC key (`prime256v1`, `secp384r1`, …), empty when unknown.
    private static func curveName(_ key: OpaquePointer) -> String {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return "" }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads an unencrypted PEM private key of a type a CA may sign with (caller frees).
    private static func loadKey(_ pem: [UInt8]) throws(CryptoError) -> OpaquePointer {
        guard let key = PEMPrivateKey.read(pem) else {
            throw CryptoError("the interception CA key is not an unencrypted PEM private key")
        }
        let bits = EVP_PKEY_get_bits(key)
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA where bits >= 2048:
            return key
        case EVP_PKEY_EC where ["prime256v1", "P-256", "secp384r1", "P-384"].contains(curveName(key)):
            return key
        default:
            EVP_PKEY_free(key)
            throw CryptoError("the interception CA key must be EC P-256, EC P-384 or RSA of at least 2048 bits")
        }
    }
}
