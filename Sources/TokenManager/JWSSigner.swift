import Crypto
import EventLoop

/// Signs a JWS signing input: a private key (RS256, ES256) or a shared secret (HS256).
public struct JWSSigner: Sendable {
    /// The JWS `alg` header value.
    public let algorithm: String
    private let signature: @Sendable ([UInt8]) throws(CryptoError) -> [UInt8]

    /// Signs with a private key: RS256 for RSA, ES256 (raw `r‖s`) for EC P-256.
    public static func key(_ key: SigningKey) -> JWSSigner {
        JWSSigner(algorithm: key.algorithm.rawValue) { input throws(CryptoError) in try key.sign(input) }
    }

    /// Signs HS256 (HMAC-SHA-256) keyed with the secret's UTF-8 bytes (RFC 7523 `client_secret_jwt`).
    public static func hs256(secret: String) -> JWSSigner {
        let key = Array(secret.utf8)
        return JWSSigner(algorithm: "HS256") { input in Digest.hmacSHA256(key: key, message: input) }
    }

    private init(algorithm: String, signature: @escaping @Sendable ([UInt8]) throws(CryptoError) -> [UInt8]) {
        self.algorithm = algorithm
        self.signature = signature
    }

    /// The signature over `input`.
    public func sign(_ input: [UInt8]) throws(CryptoError) -> [UInt8] { try signature(input) }
}
