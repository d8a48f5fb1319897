/// Decoding of `application/x-www-form-urlencoded` text (query strings, form bodies,
/// and the client id/secret inside HTTP Basic credentials per RFC 6749 §2.3.1).
public enum FormDecoding {
    /// Splits `text` at `&`, each part at its first `=`, and decodes both halves.
    /// Empty parts are skipped.
    public static func items(_ text: Substring) -> [QueryItem] {
        var result: [QueryItem] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            if let equals = part.firstIndex(of: "=") {
                result.append(QueryItem(name: decode(part[..<equals]),
                                        value: decode(part[part.index(after: equals)...])))
            } else {
                result.append(QueryItem(name: decode(part), value: ""))
            }
        }
        return result
    }

    /// The items of a form body.
    public static func items(_ body: [UInt8]) -> [QueryItem] {
        items(Substring(String(decoding: body, as: UTF8.self)))
    }

    /// Form-decodes one component: `+` is a space, `%XX` a byte. A `%` not followed by two hex
    /// digits is kept literally (lenient, like browsers). Invalid UTF-8 becomes U+FFFD.
    public static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let utf8 = Array(text.utf8)
        var i = 0
        while i < utf8.count {
            let byte = utf8[i]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), i + 2 < utf8.count,
                      let high = hexValue(utf8[i + 1]), let low = hexValue(utf8[i + 2]) {
                bytes.append(high << 4 | low)
                i += 2
            } else {
                bytes.append(byte)
            }
            i += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
