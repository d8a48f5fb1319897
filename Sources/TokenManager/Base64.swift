/// Base64 (RFC 4648 §4) encoding and base64url (§5) encoding and decoding, without Foundation.
enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard base64 with `=` padding.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            var n = UInt32(bytes[index]) << 16
            if rest == 2 { n |= UInt32(bytes[index + 1]) << 8 }
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : 0x3D)
            out.append(0x3D)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Unpadded base64url (RFC 4648 §5), as JWS (RFC 7515 §2) uses it.
    static func encodeURL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        for byte in encode(bytes).utf8 {
            switch byte {
            case 0x2B: out.append(0x2D)  // + -> -
            case 0x2F: out.append(0x5F)  // / -> _
            case 0x3D: continue          // no padding
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url (`-` and `_`), with or without padding; nil on any other character.
    static func decodeURL(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var sawPadding = false
        for byte in text.utf8 {
            let value: UInt32
            switch byte {
            case 0x41...0x5A: value = UInt32(byte - 0x41)
            case 0x61...0x7A: value = UInt32(byte - 0x61 + 26)
            case 0x30...0x39: value = UInt32(byte - 0x30 + 52)
            case 0x2D, 0x2B: value = 62
            case 0x5F, 0x2F: value = 63
            case 0x3D: sawPadding = true; continue
            default: return nil
            }
            if sawPadding { return nil }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        if bits >= 6 { return nil }  // a single leftover character cannot encode a byte
        return out
    }
}
