/// Percent-decoding (RFC 3986 §2.1), the project's one: query strings and form bodies, the
/// targets a proxy searches, AWS's canonical queries.
public enum PercentDecoding {
    /// `text` with every `%XY` escape decoded; a `%` not followed by two hex digits is kept as it
    /// is (lenient, like browsers); with `plusIsSpace` (form encoding), `+` is a space. Invalid
    /// UTF-8 becomes U+FFFD.
    public static func decode(_ text: Substring, plusIsSpace: Bool = false) -> String {
        String(decoding: decodedBytes(Array(text.utf8)[...], plusIsSpace: plusIsSpace), as: UTF8.self)
    }

    /// The bytes of `utf8` with every `%XY` escape decoded, as ``decode(_:plusIsSpace:)`` but
    /// left as bytes (which need not be UTF-8).
    public static func decodedBytes(_ utf8: ArraySlice<UInt8>, plusIsSpace: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if plusIsSpace && byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), index + 2 < utf8.endIndex,
                      let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2]) {
                bytes.append(high << 4 | low)
                index += 2
            } else {
                bytes.append(byte)
            }
            index += 1
        }
        return bytes
    }

    /// The value of a hex digit, nil for another byte.
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// RFC 3986 §2.3's unreserved characters (`A-Z a-z 0-9 - . _ ~`): never percent-encoded by a
    /// normalizing encoder, and decoded where a path is normalized.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: return true
        default: return false
        }
    }
}
