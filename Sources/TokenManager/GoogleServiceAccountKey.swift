import Crypto
import Foundation

/// A Google service-account key file, as Google's libraries read it: the RSA `private_key`
/// (PEM), `client_email` (the assertion's issuer), `token_uri` (where it is traded) and
/// `private_key_id` (the JWS `kid`).
public struct GoogleServiceAccountKey: Sendable {
    /// The signing key.
    public let key: SigningKey
    /// `client_email`.
    public let clientEmail: String
    /// `token_uri`.
    public let tokenURI: String
    /// `private_key_id`, when present.
    public let keyId: String?

    /// Parses the file's bytes; the error names the field at fault, never a value.
    public init(json: [UInt8]) throws(CryptoError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
            throw CryptoError("not a JSON object (expected a service account key file)")
        }
        guard let pem = object["private_key"] as? String, !pem.isEmpty else { throw CryptoError("no private_key") }
        guard let email = object["client_email"] as? String, !email.isEmpty else { throw CryptoError("no client_email") }
        guard let uri = object["token_uri"] as? String, !uri.isEmpty else { throw CryptoError("no token_uri") }
        key = try SigningKey(pem: Array(pem.utf8))
        clientEmail = email
        tokenURI = uri
        keyId = object["private_key_id"] as? String
    }
}
