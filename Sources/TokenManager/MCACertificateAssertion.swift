import Crypto
import EventLoop

/// The `IMFCert` assertion of the MCA certificate flow (the SDK's
/// `getAuthorizationHeaderByCertificate`): a compact RS256 JWS with the protected header
/// `{"alg":"RS256","x5c":["<base64 DER of the certificate>"]}` and the payload
/// `{"timestamp":<milliseconds since 1970>}`, made anew for every fetch.
public enum MCACertificateAssertion {
    /// Signs an assertion for `certificate` with its RSA `key` at `now` (seconds since 1970).
    public static func signed(certificate: X509Certificate, key: SigningKey, now: Double) throws(CryptoError) -> String {
        guard key.algorithm == .rs256 else {
            throw CryptoError("the MCA certificate flow signs RS256: clientKey must be an RSA key")
        }
        guard key.matches(certificate) else { throw CryptoError("clientKey is not the key of clientCert") }
        let header: [String: Any] = ["x5c": [JWS.base64(certificate.der)]]
        let payload: [String: Any] = ["timestamp": Int64((now * 1000).rounded(.down))]
        return try JWS.compact(header: header, payload: payload, signer: .key(key))
    }
}
