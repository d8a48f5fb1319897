import Crypto
import EventLoop
import JSON

/// A DPoP key (RFC 9449) and what every proof made with it repeats, computed once: the encoded
/// JOSE header (`typ: dpop+jwt`, `alg`, the public `jwk`) and the key's RFC 7638 thumbprint
/// (`jkt`, what a bound token's `cnf` names). Signs a fresh proof per request.
///
/// Immutable; signing is thread-safe (``SigningKey``), so every worker may use one instance.
public final class DPoPKey: Sendable {
    /// The JWK thumbprint (base64url SHA-256), safe to show: it identifies the key, reveals nothing.
    public let thumbprint: String
    private let key: SigningKey
    private let encodedHeader: String

    /// Wraps `key` (EC P-256 → ES256, RSA → RS256).
    public init(key: SigningKey) throws(CryptoError) {
        self.key = key
        let members: [(String, String)]
        switch try key.publicNumbers() {
        case .ec(let x, let y):
            members = [("crv", "P-256"), ("kty", "EC"), ("x", Base64.encodeURL(x)), ("y", Base64.encodeURL(y))]
        case .rsa(let n, let e):
            members = [("e", Base64.encodeURL(e)), ("kty", "RSA"), ("n", Base64.encodeURL(n))]
        }
        // RFC 7638 §3: the required members, lexicographic, no whitespace.
        let jwk = "{" + members.map { "\"\($0.0)\":\"\($0.1)\"" }.joined(separator: ",") + "}"
        thumbprint = Base64.encodeURL(Digest.sha256(Array(jwk.utf8)))
        let header = "{\"alg\":\"\(key.algorithm.rawValue)\",\"jwk\":\(jwk),\"typ\":\"dpop+jwt\"}"
        encodedHeader = Base64.encodeURL(Array(header.utf8))
    }

    /// A new P-256 key held only in memory (`dpop: true`).
    public static func generated() throws(CryptoError) -> DPoPKey {
        try DPoPKey(key: SigningKey.generateP256())
    }

    /// A proof for one request (RFC 9449 §4.2): `htm` = `method`, `htu` = `uri` (scheme,
    /// authority and path the server receives; no query or fragment), `iat` = `now` (seconds
    /// since 1970), a unique random `jti`, `ath` = base64url SHA-256 of `accessToken` when
    /// presenting one, and `nonce` when the server gave one.
    public func proof(method: String, uri: String, accessToken: String? = nil, nonce: String? = nil,
                      now: Double) throws(CryptoError) -> String {
        try proof(method: method, uri: uri, ath: accessToken.map(DPoPKey.ath), nonce: nonce, now: now)
    }

    /// The same with `ath` already computed (``ath(_:)``: a token's is the same for every request).
    func proof(method: String, uri: String, ath: String?, nonce: String?, now: Double) throws(CryptoError) -> String {
        // OpenSSL's DRBG, not a getrandom(2) per byte: a proof is made for every request.
        guard let jti = AESGCM.randomBytes(16) else { throw CryptoError("no random bytes for the jti") }
        var payload = "{\"htm\":" + JSONString.quoted(method) + ",\"htu\":" + JSONString.quoted(uri)
            + ",\"iat\":" + String(Int64(now)) + ",\"jti\":\"" + Base64.encodeURL(jti) + "\""
        if let ath { payload += ",\"ath\":\"" + ath + "\"" }
        if let nonce { payload += ",\"nonce\":" + JSONString.quoted(nonce) }
        payload += "}"
        let input = encodedHeader + "." + Base64.encodeURL(Array(payload.utf8))
        return input + "." + Base64.encodeURL(try key.sign(Array(input.utf8)))
    }

    /// `ath` for `accessToken`: base64url SHA-256 of it (RFC 9449 §4.2).
    static func ath(_ accessToken: String) -> String {
        Base64.encodeURL(Digest.sha256(Array(accessToken.utf8)))
    }
}
