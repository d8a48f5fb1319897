import Foundation

/// The claims of a JWT (RFC 7519) read without verifying it: only where a token's own words are
/// taken as information (when it expires, whose it is), never as proof.
public enum JWTPayload {
    /// The payload decoded as `Claims` if `token` is three base64url parts whose middle one is a
    /// JSON object that decodes so; nil otherwise.
    public static func claims<Claims: Decodable>(_ type: Claims.Type, of token: String) -> Claims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty, let payload = Base64.decodeURL(parts[1]) else { return nil }
        return try? JSONDecoder().decode(type, from: Data(payload))
    }
}
