import Foundation

/// Base64 (RFC 4648 §4) and base64url (§5) on top of Foundation's codec, the project's one
/// Base64: standard encoding for HTTP Basic and `x5c`, unpadded base64url for JWS.
enum Base64 {
    /// Standard base64 with `=` padding.
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    /// Unpadded base64url (RFC 4648 §5), as JWS (RFC 7515 §2) uses it.
    static func encodeURL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url, with or without padding (standard `+` and `/` are accepted too); nil
    /// on any other character or an impossible length.
    static func decodeURL(_ text: Substring) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.utf8.count % 4 != 1 else { return nil }
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
