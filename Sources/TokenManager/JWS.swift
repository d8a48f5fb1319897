import Crypto
import EventLoop
import Foundation

/// JWS compact serialization (RFC 7515 §7.1): `base64url(header).base64url(payload).base64url(signature)`.
public enum JWS {
    /// Signs `payload` with `signer`; `header` gets `alg` from the signer, other members as given.
    /// Members are written with sorted keys and unescaped slashes (any order is valid JSON; a
    /// fixed one makes the output reproducible in tests).
    public static func compact(header: [String: Any], payload: [String: Any], signer: JWSSigner) throws(CryptoError) -> String {
        var header = header
        header["alg"] = signer.algorithm
        let input = encodeJSON(header) + "." + encodeJSON(payload)
        let signature = try signer.sign(Array(input.utf8))
        return input + "." + Base64.encodeURL(signature)
    }

    /// base64url of a JSON object's UTF-8 (its members are strings, numbers and string arrays).
    static func encodeJSON(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Base64.encodeURL(Array(data))
    }

    /// Standard (padded) base64, as the `x5c` header wants certificates (RFC 7515 §4.1.6).
    public static func base64(_ bytes: [UInt8]) -> String { Base64.encode(bytes) }
}
