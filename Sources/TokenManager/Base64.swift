import Foundation

/// Base64 (RFC 4648 §4) and base64url (§5), the project's one Base64: standard encoding for
/// HTTP Basic and `x5c`, unpadded base64url for JWS. Encoding is a table walk (a DPoP proof
/// encodes three parts on every request); decoding uses Foundation's codec.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64 with `=` padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standardAlphabet, padded: true)
    }

    /// Unpadded base64url (RFC 4648 §5), as JWS (RFC 7515 §2) uses it.
    static func encodeURL(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlAlphabet, padded: false)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], padded: Bool) -> String {
        let full = bytes.count / 3
        let rest = bytes.count % 3
        let length = full * 4 + (rest == 0 ? 0 : (padded ? 4 : rest + 1))
        return String(unsafeUninitializedCapacity: length) { out in
            var o = 0
            var i = 0
            for _ in 0..<full {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = alphabet[Int(n >> 18)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            if rest > 0 {
                let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                out[o] = alphabet[Int(n >> 18)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
                if rest == 2 {
                    out[o] = alphabet[Int(n >> 6 & 63)]
                    o += 1
                } else if padded {
                    out[o] = 0x3D
                    o += 1
                }
                if padded {
                    out[o] = 0x3D
                    o += 1
                }
            }
            return o
        }
    }

    /// Decodes base64url, with or without padding (standard `+` and `/` are accepted too); nil
    /// on any other character or an impossible length.
    public static func decodeURL(_ text: Substring) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.utf8.count % 4 != 1 else { return nil }
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
