/// A route's rules in the form a request is matched against: two flat arrays of plain values
/// (per rule its method bits and its patterns' range; per pattern how it is matched, a hash of
/// its first segment and where its literal bytes are), so deciding touches no reference count:
/// on a route with 20 rules a request costs 20 bit tests and an integer comparison for each
/// pattern whose first segment is not the path's, and a byte comparison for the rest. Patterns
/// that are neither literal nor literal-then-`**` keep their ``PathPattern`` and are matched by
/// segments.
struct CompiledRules: Sendable {
    /// How one pattern is matched.
    private enum Kind: UInt8, Sendable {
        case literal, literalThenAny, general
    }

    private struct Rule: Sendable {
        /// Standard methods allowed (``anyMethod``: any).
        var methods: UInt16
        /// Methods beyond the standard ones, when it has some (``otherMethods``).
        var hasOtherMethods: Bool
        var firstPattern: Int
        var endPattern: Int
    }

    private struct Pattern: Sendable {
        var kind: Kind
        /// ``segmentHash(_:)`` of its first literal segment; nil when it has none (`/**`) or
        /// is general: any path may match.
        var firstSegment: UInt64?
        var literalStart: Int
        var literalCount: Int
    }

    /// A rule that allows any method.
    private static let anyMethod: UInt16 = 0xFFFF

    private let names: [String]
    private let rules: [Rule]
    /// The rules that may allow a path, by the hash of its first segment: those with a pattern
    /// starting with that segment or with no literal first segment, in order. A first segment
    /// no pattern starts with gets ``anyFirstSegment``.
    private let byFirstSegment: SegmentIndex
    /// The rules with a pattern without a literal first segment (or with no paths), in order.
    private let anyFirstSegment: [Int]
    private let patterns: [Pattern]
    private let literals: [UInt8]
    /// Per rule, the methods beyond the standard ones (usually none).
    private let otherMethods: [[String]]
    /// Per pattern, the pattern itself when it is general.
    private let general: [PathPattern?]

    /// The table of `rules`.
    init(_ rules: [RouteRule]) {
        names = rules.map(\.name)
        otherMethods = rules.map { $0.methods.filter { Self.bit(of: $0) == 0 } }
        var table: [Rule] = [], patterns: [Pattern] = [], literals: [UInt8] = [], general: [PathPattern?] = []
        for rule in rules {
            let first = patterns.count
            for pattern in rule.paths {
                if let literal = pattern.literalPath {
                    let segment = literal.bytes.dropFirst().prefix { $0 != 0x2F }
                    patterns.append(Pattern(kind: literal.thenAny ? .literalThenAny : .literal,
                                            firstSegment: literal.bytes.isEmpty ? nil : Self.segmentHash(segment),
                                            literalStart: literals.count, literalCount: literal.bytes.count))
                    literals += literal.bytes
                    general.append(nil)
                } else {
                    patterns.append(Pattern(kind: .general, firstSegment: nil, literalStart: 0, literalCount: 0))
                    general.append(pattern)
                }
            }
            let methods = rule.methods.isEmpty ? Self.anyMethod : rule.methods.reduce(0) { $0 | Self.bit(of: $1) }
            table.append(Rule(methods: methods, hasOtherMethods: rule.methods.contains { Self.bit(of: $0) == 0 },
                              firstPattern: first, endPattern: patterns.count))
        }
        var open: [Int] = [], bySegment: [UInt64: [Int]] = [:]
        for (index, rule) in table.enumerated() {
            let segments = (rule.firstPattern..<rule.endPattern).map { patterns[$0].firstSegment }
            if segments.isEmpty || segments.contains(nil) {
                open.append(index)
            }
            for case let segment? in segments where bySegment[segment]?.last != index {
                bySegment[segment, default: []].append(index)
            }
        }
        // Each segment's list also holds the open rules, merged in order (first match wins).
        byFirstSegment = SegmentIndex(bySegment.mapValues { Array(Set($0 + open)).sorted() })
        anyFirstSegment = open
        self.rules = table
        self.patterns = patterns
        self.literals = literals
        self.general = general
    }

    /// The bit of a standard method, 0 for any other (a switch: compared as small strings).
    private static func bit(of method: String) -> UInt16 {
        switch method {
        case "GET": return 1 << 0
        case "HEAD": return 1 << 1
        case "POST": return 1 << 2
        case "PUT": return 1 << 3
        case "DELETE": return 1 << 4
        case "PATCH": return 1 << 5
        case "OPTIONS": return 1 << 6
        case "TRACE": return 1 << 7
        case "CONNECT": return 1 << 8
        default: return 0
        }
    }

    /// FNV-1a of a segment's bytes.
    @inline(__always)
    private static func segmentHash<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// The index of the first rule allowing `method` on the normalized `path` (its bytes, in
    /// place: nothing is copied for a path matched by literals), nil when none does.
    func firstAllowing(method: String, path bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        let bit = Self.bit(of: method)
        let first = Self.segmentHash(bytes.dropFirst().prefix { $0 != 0x2F })
        return byFirstSegment.withRules(of: first, otherwise: anyFirstSegment) { candidates in
            rules.withUnsafeBufferPointer { rules in
                patterns.withUnsafeBufferPointer { patterns in
                    literals.withUnsafeBufferPointer { literals in
                        var segments: [Substring]?
                        for index in candidates {
                            let rule = rules[index]
                            if rule.methods != Self.anyMethod && rule.methods & bit == 0
                                && !(rule.hasOtherMethods && otherMethods[index].contains(method)) { continue }
                            if rule.firstPattern == rule.endPattern { return index }
                            for position in rule.firstPattern..<rule.endPattern {
                                let pattern = patterns[position]
                                if let segment = pattern.firstSegment, segment != first { continue }
                                let matched: Bool
                                switch pattern.kind {
                                case .literal:
                                    matched = bytes.count == pattern.literalCount
                                        && Self.equal(bytes, literals, from: pattern.literalStart, count: pattern.literalCount)
                                case .literalThenAny:
                                    let count = pattern.literalCount
                                    matched = bytes.count >= count && (bytes.count == count || count == 0 || bytes[count] == 0x2F)
                                        && Self.equal(bytes, literals, from: pattern.literalStart, count: count)
                                case .general:
                                    // Rare (a `*` or a `**` inside): the path split once, as text.
                                    let split = segments ?? PathPattern.segments(of: String(decoding: bytes, as: UTF8.self))
                                    segments = split
                                    matched = general[position]?.matches(segments: split) ?? false
                                }
                                if matched { return index }
                            }
                        }
                        return nil
                    }
                }
            }
        }
    }

    /// The name of rule `index`.
    func name(of index: Int) -> String {
        names[index]
    }

    /// Whether the first `count` bytes of `bytes` (which has that many) are the literal bytes
    /// from `start`.
    @inline(__always)
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literals: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> Bool {
        for offset in 0..<count where bytes[offset] != literals[start + offset] { return false }
        return true
    }
}

/// The rules to try by the hash of a path's first segment: an open-addressed table probed with
/// the hash itself (already a good hash: FNV-1a), the lists of rule indexes in one array — a
/// lookup is a mask, a comparison or two and a slice, where a `Dictionary` hashes the key again.
private struct SegmentIndex: Sendable {
    private struct Slot: Sendable {
        var hash: UInt64
        var start: Int32
        /// -1: empty.
        var count: Int32
    }

    private let slots: [Slot]
    private let lists: [Int]
    private let mask: Int

    /// The index of `lists` (first-segment hash → rule indexes).
    init(_ lists: [UInt64: [Int]]) {
        var size = 4
        while size < lists.count * 2 { size *= 2 }
        var slots = [Slot](repeating: Slot(hash: 0, start: 0, count: -1), count: size)
        var flat: [Int] = []
        for (hash, rules) in lists.sorted(by: { $0.key < $1.key }) {
            var position = Self.slot(of: hash) & (size - 1)
            while slots[position].count >= 0 { position = (position + 1) & (size - 1) }
            slots[position] = Slot(hash: hash, start: Int32(flat.count), count: Int32(rules.count))
            flat += rules
        }
        self.slots = slots
        self.lists = flat
        mask = size - 1
    }

    /// Where `hash` goes before probing: its bits mixed (Fibonacci hashing), since FNV-1a's low
    /// bits follow the low bits of each byte (segments differing only in case would collide).
    @inline(__always)
    private static func slot(of hash: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> 32)
    }

    /// Calls `body` with the rules of `hash`, or with `otherwise` when it has none.
    @inline(__always)
    func withRules<Result>(of hash: UInt64, otherwise: [Int], _ body: (UnsafeBufferPointer<Int>) -> Result) -> Result {
        var position = Self.slot(of: hash) & mask
        let found: Slot? = slots.withUnsafeBufferPointer { slots in
            while true {
                let slot = slots[position]
                if slot.count < 0 { return nil }
                if slot.hash == hash { return slot }
                position = (position + 1) & mask
            }
        }
        guard let found else { return otherwise.withUnsafeBufferPointer(body) }
        return lists.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[Int(found.start)..<Int(found.start + found.count)])) }
    }
}
