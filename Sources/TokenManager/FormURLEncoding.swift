/// `application/x-www-form-urlencoded` encoding as RFC 6749 Appendix B and §2.3.1 use it.
///
/// Every byte of the UTF-8 form except ALPHA, DIGIT and `*-._` is percent-encoded (uppercase
/// hex), and a space becomes `+`.
public enum FormURLEncoding {
    /// Encodes one name or value.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2A, 0x2D, 0x2E, 0x5F:
                out.append(byte)
            case 0x20:
                out.append(0x2B)
            default:
                out.append(0x25)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes `name=value` pairs joined by `&`, in the order given.
    public static func encode(_ pairs: [(name: String, value: String)]) -> String {
        pairs.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
}
