import Foundation

/// Reads the `exp` claim of a JWT (RFC 7519) without verifying it: only to learn when an
/// access token expires when the response has no `expires_in`, or when a subject token does.
public enum JWTExpiry {
    private struct Claims: Decodable {
        let exp: Double
    }

    /// `exp` (seconds since 1970) if `token` is three base64url parts whose middle one is a JSON
    /// object with a numeric `exp`; nil otherwise.
    public static func expiry(of token: String) -> Double? {
        guard let claims = JWTPayload.claims(Claims.self, of: token), claims.exp.isFinite else { return nil }
        return claims.exp
    }
}
