import Config
import Glibc
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
        /// The placeholder of one credential, found `places` times (in field values, Basic
        /// pairs and the target together).
        case credential(String, placeholder: [UInt8], places: Int)
        /// The placeholders of several credentials: no route may receive them all.
        case several([String])
        /// A `tsp_` value that is no credential's placeholder.
        case unknown
        /// An `Authorization: Basic` value that does not decode (what it hides cannot be checked).
        case undecodableBasic
    }

    /// Credential names and their placeholders' bytes, sorted by name.
    private let entries: [(name: String, placeholder: [UInt8])]
    private static let prefix = Array(PlaceholderSetting.generatedPrefix.utf8)

    /// A scanner for `placeholders` (credential name → placeholder); nil when there are none.
    init?(_ placeholders: [String: String]) {
        guard !placeholders.isEmpty else { return nil }
        entries = placeholders.keys.sorted().map { ($0, Array(placeholders[$0]!.utf8)) }
    }

    /// Scans `head`: every field value, every Basic pair (decoded), the target as sent and,
    /// when it holds escapes, percent-decoded (an encoded placeholder is still one).
    func scan(_ head: RequestHead) -> Finding {
        var found: [Int] = []  // allocates only when something is found
        var places = 0
        var unknown = false
        var undecodable = false
        /// Looks at one text; returns how many placeholders it holds.
        func look(_ text: UnsafeRawBufferPointer) -> Int {
            var count = 0
            for (index, entry) in entries.enumerated() {
                var from = 0
                while let hit = ByteSearch.find(entry.placeholder, in: text, from: from) {
                    if !found.contains(index) { found.append(index) }
                    count += 1
                    from = hit + entry.placeholder.count
                }
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
            return count
        }
        head.withFieldSection { section in
            for line in section.lines {
                let value = section.value(of: line)
                places += look(value)
                if section.name(of: line, equals: "authorization"), Self.isBasic(value) {
                    if let pair = Self.basicPair(value) { places += pair.withUnsafeBytes { look($0) } } else { undecodable = true }
                }
            }
        }
        // The target: its authority (which holds no escapes), then its path as sent and, when it
        // holds escapes, decoded: the more of the two counts.
        var path = "", authority: String?
        switch head.target {
        case .origin(let target): path = target
        case .absolute(_, let host, let target): (authority, path) = (host.description, target)
        case .authority(let host): authority = host.description
        case .asterisk: break
        }
        if var authority { places += authority.withUTF8 { look(UnsafeRawBufferPointer($0)) } }
        var escaped = false
        var inPath = path.withUTF8 { bytes in
            escaped = bytes.baseAddress.map { memchr($0, 0x25, bytes.count) != nil } ?? false
            return look(UnsafeRawBufferPointer(bytes))
        }
        if escaped {
            var decoded = PercentDecoding.decode(Substring(path))
            inPath = max(inPath, decoded.withUTF8 { look(UnsafeRawBufferPointer($0)) })
        }
        places += inPath
        if unknown { return .unknown }
        if undecodable { return .undecodableBasic }
        switch found.count {
        case 0: return .none
        case 1: return .credential(entries[found[0]].name, placeholder: entries[found[0]].placeholder, places: places)
        default: return .several(found.sorted().map { entries[$0].name })
        }
    }

    /// Whether a value is of the `Basic` scheme (any case, then a space or a tab).
    static func isBasic(_ value: UnsafeRawBufferPointer) -> Bool {
        value.count > 5 && (value[5] == 0x20 || value[5] == 0x09) && value[0..<5].lazy.map(ASCIICase.lower).elementsEqual("basic".utf8)
    }

    /// The decoded `user:password` of a `Basic` credential (RFC 7617), or nil.
    static func basicPair(_ value: UnsafeRawBufferPointer) -> [UInt8]? {
        guard isBasic(value) else { return nil }
        var rest = value[6...].drop { $0 == 0x20 || $0 == 0x09 }
        while rest.last == 0x20 || rest.last == 0x09 { rest = rest.dropLast() }
        guard !rest.isEmpty else { return nil }
        return Base64.decodeURL(Substring(decoding: rest, as: UTF8.self))
    }

    /// Whether a `tsp_` at `start` begins a value: at the start, or after a byte that cannot
    /// be part of one (so `xtsp_…` inside a longer word is not taken for a placeholder).
    private static func startsValue(_ text: UnsafeRawBufferPointer, at start: Int) -> Bool {
        start == 0 || !PlaceholderSetting.isPlaceholderByte(text[start - 1])
    }
}
