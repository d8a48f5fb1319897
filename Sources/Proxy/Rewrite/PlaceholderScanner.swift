import Config
import HTTP1
import TokenManager

/// Finds credential placeholders in a request head: in every field value, inside a Basic
/// pair (decoded), and in the target. Bodies are not searched. Built once per configuration
/// from the credentials that declare one; a configuration without placeholders has no scanner
/// and its requests are never looked at.
struct PlaceholderScanner: Sendable {
    /// What a scan found.
    enum Finding: Equatable {
        /// No placeholder.
        case none
        /// The placeholder of one credential (possibly several times).
        case credential(String, placeholder: [UInt8])
        /// The placeholders of several credentials: no route may receive them all.
        case several([String])
        /// A `tsp_` value that is no credential's placeholder.
        case unknown
    }

    /// Credential names and their placeholders' bytes, sorted by name.
    private let entries: [(name: String, placeholder: [UInt8])]
    private static let prefix = Array(PlaceholderSetting.generatedPrefix.utf8)

    /// A scanner for `placeholders` (credential name → placeholder); nil when there are none.
    init?(_ placeholders: [String: String]) {
        guard !placeholders.isEmpty else { return nil }
        entries = placeholders.keys.sorted().map { ($0, Array(placeholders[$0]!.utf8)) }
    }

    /// Scans `head`.
    func scan(_ head: RequestHead) -> Finding {
        var found: [Int] = []
        var unknown = false
        func look(_ text: UnsafeRawBufferPointer) {
            var covered: [Range<Int>] = []
            for (index, entry) in entries.enumerated() {
                let hits = Self.occurrences(of: entry.placeholder, in: text)
                if !hits.isEmpty {
                    if !found.contains(index) { found.append(index) }
                    covered += hits
                }
            }
            for start in Self.occurrences(of: Self.prefix, in: text).map(\.lowerBound)
            where Self.startsValue(text, at: start) && !covered.contains(where: { $0.contains(start) }) {
                unknown = true
            }
        }
        head.withFieldSection { section in
            for line in section.lines {
                let value = section.value(of: line)
                look(value)
                if section.name(of: line, equals: "authorization"), let pair = Self.basicPair(value) {
                    pair.withUnsafeBytes { look($0) }
                }
            }
        }
        var target = Self.text(of: head.target)
        target.withUTF8 { look(UnsafeRawBufferPointer($0)) }
        if unknown { return .unknown }
        switch found.count {
        case 0: return .none
        case 1: return .credential(entries[found[0]].name, placeholder: entries[found[0]].placeholder)
        default: return .several(found.sorted().map { entries[$0].name })
        }
    }

    /// The target as the app sent it (path and query; an absolute-form's authority too).
    static func text(of target: RequestTarget) -> String {
        switch target {
        case .origin(let path): return path
        case .absolute(let scheme, let authority, let path): return scheme + "://" + authority.description + path
        case .authority(let authority): return authority.description
        case .asterisk: return "*"
        }
    }

    /// The decoded `user:password` of a `Basic` credential (RFC 7617), or nil.
    static func basicPair(_ value: UnsafeRawBufferPointer) -> [UInt8]? {
        guard value.count > 6, value[5] == 0x20,
              value[0..<5].map({ $0 | 0x20 }).elementsEqual("basic".utf8) else { return nil }
        var rest = value[6...].drop { $0 == 0x20 }
        while rest.last == 0x20 { rest = rest.dropLast() }
        return Base64.decodeURL(Substring(decoding: rest, as: UTF8.self))
    }

    /// Whether a `tsp_` at `start` begins a value: at the start, or after a byte that cannot
    /// be part of one (so `xtsp_…` inside a longer word is not taken for a placeholder).
    private static func startsValue(_ text: UnsafeRawBufferPointer, at start: Int) -> Bool {
        start == 0 || !PlaceholderSetting.isPlaceholderByte(text[start - 1])
    }

    /// Every place `needle` occurs in `text` (non-overlapping, left to right).
    static func occurrences(of needle: [UInt8], in text: UnsafeRawBufferPointer) -> [Range<Int>] {
        guard let first = needle.first, needle.count <= text.count else { return [] }
        var hits: [Range<Int>] = []
        var index = 0
        let last = text.count - needle.count
        while index <= last {
            if text[index] == first && text[index..<index + needle.count].elementsEqual(needle) {
                hits.append(index..<index + needle.count)
                index += needle.count
            } else {
                index += 1
            }
        }
        return hits
    }
}
