import HTTP1

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

    /// Form-decodes one component: `+` is a space, `%XX` a byte (``PercentDecoding``).
    public static func decode(_ text: Substring) -> String {
        PercentDecoding.decode(text, plusIsSpace: true)
    }
}
