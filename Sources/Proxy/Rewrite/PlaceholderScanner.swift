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
        var found: [Int] = []  // allocates only when something is found
        var unknown = false
        func look(_ text: UnsafeRawBufferPointer) {
            for (index, entry) in entries.enumerated() where ByteSearch.find(entry.placeholder, in: text) != nil {
                if !found.contains(index) { found.append(index) }
            }
            // A `tsp_` that starts a value must be a known placeholder starting right there (a
            // placeholder's own bytes never start a value inside it: they are all value bytes).
            var from = 0
            while let hit = ByteSearch.find(Self.prefix, in: text, from: from) {
                if Self.startsValue(text, at: hit) && !entries.contains(where: { ByteSearch.matches($0.placeholder, in: text, at: hit) }) {
                    unknown = true
                }
                from = hit + 1
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
        switch head.target {
        case .origin(var path): path.withUTF8 { look(UnsafeRawBufferPointer($0)) }
        case .absolute(_, _, var path): path.withUTF8 { look(UnsafeRawBufferPointer($0)) }
        case .authority, .asterisk: break
        }
        if unknown { return .unknown }
        switch found.count {
        case 0: return .none
        case 1: return .credential(entries[found[0]].name, placeholder: entries[found[0]].placeholder)
        default: return .several(found.sorted().map { entries[$0].name })
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
}
