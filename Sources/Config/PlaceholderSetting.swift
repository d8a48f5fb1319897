/// A credential's placeholder (`credentials.<name>.placeholder` or `placeholderFile`): a
/// stand-in the app holds and sends where its API expects the key; the proxy swaps in the real
/// token only on the way to a route that may receive this credential.
public enum PlaceholderSetting: Sendable, Hashable {
    /// `placeholder: TEXT`, given by the operator (16 or more characters, unreserved URL
    /// characters only, so that it survives a query string and a Basic pair as it is).
    case value(String)
    /// `placeholderFile: PATH` (resolved against the config file's directory): read at start,
    /// or, when absent, a new `tsp_` placeholder is generated and written there (mode 0644) for
    /// the app to read.
    case file(String)

    /// The prefix of every generated placeholder; any value with it that matches no credential
    /// is refused.
    public static let generatedPrefix = "tsp_"
    /// The fewest characters a placeholder has.
    public static let minimumLength = 16

    /// Why `text` cannot be a placeholder, or nil when it can.
    public static func problem(_ text: String) -> String? {
        if text.utf8.count < minimumLength { return "must be at least \(minimumLength) characters long" }
        if !text.utf8.allSatisfy(isPlaceholderByte) {
            return "may contain only letters, digits and '-', '.', '_', '~' (it must pass through a URL and a Basic pair unchanged)"
        }
        return nil
    }

    /// RFC 3986 §2.3 unreserved characters.
    public static func isPlaceholderByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
