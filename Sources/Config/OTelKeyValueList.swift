/// The `key=value,key=value` lists of `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`
/// (W3C Baggage syntax without properties): entries split at commas, each at its first `=`, spaces
/// and tabs around keys and values trimmed, percent-escapes decoded as UTF-8. Empty entries
/// (`a=1,,b=2`, a trailing comma) are skipped. Messages name the entry by position, never its text:
/// header values are secrets, and a malformed entry may be one.
enum OTelKeyValueList {
    /// One entry.
    struct Pair: Equatable {
        let key: String
        let value: String
    }

    /// The entries in order; keys are percent-decoded too when `decodeKeys`.
    static func parse(_ text: String, decodeKeys: Bool) -> Result<[Pair], ProblemMessage> {
        var pairs: [Pair] = []
        for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let position = "entry \(index + 1)"
            if trimmed(entry).isEmpty { continue }
            guard let equals = entry.firstIndex(of: "=") else {
                return .failure(ProblemMessage("\(position) is not key=value (entries are separated by commas)"))
            }
            let rawKey = trimmed(entry[..<equals])
            guard !rawKey.isEmpty else { return .failure(ProblemMessage("\(position) has no key before '='")) }
            guard let key = decodeKeys ? percentDecoded(rawKey) : String(rawKey) else {
                return .failure(ProblemMessage("\(position) has a key that is not valid percent-encoded UTF-8"))
            }
            guard let value = percentDecoded(trimmed(entry[entry.index(after: equals)...])) else {
                return .failure(ProblemMessage("\(position) has a value that is not valid percent-encoded UTF-8"))
            }
            pairs.append(Pair(key: key, value: value))
        }
        return .success(pairs)
    }

    /// `text` with every `%XX` decoded; nil when a `%` is not followed by two hex digits or the
    /// bytes are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%") {
                guard index + 2 < utf8.count, let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2]) else {
                    return nil
                }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var result = text
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
