/// A route's rules in the form a request is matched against: flat arrays of plain values (a
/// method bit set per rule, literal paths as bytes in one buffer), so deciding touches no
/// reference count — on a route with 20 rules a request walks 20 bit tests and a few byte
/// comparisons. Patterns that are neither literal nor literal-then-`**` keep their
/// ``PathPattern`` and are matched by segments.
struct CompiledRules: Sendable {
    /// How one pattern is matched.
    private enum Kind: UInt8, Sendable {
        case literal, literalThenAny, general
    }

    /// The methods with a bit of their own; any other is compared by name.
    private static let standardMethods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"]
    /// A rule that allows any method.
    private static let anyMethod: UInt16 = 0xFFFF

    private let names: [String]
    private let methodBits: [UInt16]
    /// Per rule, the methods beyond the standard ones (usually none).
    private let otherMethods: [[String]]
    /// Per rule, its patterns: `patternStart[r]..<patternStart[r + 1]`.
    private let patternStart: [Int]
    private let kinds: [Kind]
    private let literalStart: [Int]
    private let literalCount: [Int]
    private let literals: [UInt8]
    private let general: [PathPattern?]

    /// The table of `rules`.
    init(_ rules: [RouteRule]) {
        names = rules.map(\.name)
        methodBits = rules.map { rule in
            rule.methods.isEmpty ? Self.anyMethod : rule.methods.reduce(0) { $0 | Self.bit(of: $1) }
        }
        otherMethods = rules.map { $0.methods.filter { Self.bit(of: $0) == 0 } }
        var starts = [0], kinds: [Kind] = [], literalStart: [Int] = [], literalCount: [Int] = [], literals: [UInt8] = []
        var general: [PathPattern?] = []
        for rule in rules {
            for pattern in rule.paths {
                literalStart.append(literals.count)
                if let literal = pattern.literalPath {
                    kinds.append(literal.thenAny ? .literalThenAny : .literal)
                    literals += literal.bytes
                    general.append(nil)
                } else {
                    kinds.append(.general)
                    general.append(pattern)
                }
                literalCount.append(literals.count - literalStart[literalStart.count - 1])
            }
            starts.append(kinds.count)
        }
        patternStart = starts
        self.kinds = kinds
        self.literalStart = literalStart
        self.literalCount = literalCount
        self.literals = literals
        self.general = general
    }

    /// The bit of a standard method, 0 for any other.
    private static func bit(of method: String) -> UInt16 {
        guard let index = standardMethods.firstIndex(of: method) else { return 0 }
        return 1 << UInt16(index)
    }

    /// The first rule allowing `method` on the normalized `path`, nil when none does.
    func firstAllowing(method: String, path: String) -> String? {
        let bit = Self.bit(of: method)
        var contiguous = path
        let index: Int? = contiguous.withUTF8 { bytes in
            literals.withUnsafeBufferPointer { literals in
                var segments: [Substring]?
                for rule in 0..<methodBits.count {
                    let bits = methodBits[rule]
                    guard bits == Self.anyMethod || (bit != 0 ? bits & bit != 0 : otherMethods[rule].contains(method)) else { continue }
                    let first = patternStart[rule], end = patternStart[rule + 1]
                    if first == end { return rule }
                    for pattern in first..<end {
                        let matched: Bool
                        switch kinds[pattern] {
                        case .literal:
                            matched = Self.equal(bytes, literals, from: literalStart[pattern], count: literalCount[pattern])
                        case .literalThenAny:
                            let count = literalCount[pattern]
                            matched = bytes.count >= count && (bytes.count == count || count == 0 || bytes[count] == 0x2F)
                                && Self.equal(UnsafeBufferPointer(rebasing: bytes[0..<count]), literals, from: literalStart[pattern], count: count)
                        case .general:
                            let split = segments ?? PathPattern.segments(of: path)
                            segments = split
                            matched = general[pattern]?.matches(segments: split) ?? false
                        }
                        if matched { return rule }
                    }
                }
                return nil
            }
        }
        return index.map { names[$0] }
    }

    /// Whether `bytes` are the `count` literal bytes from `start`.
    @inline(__always)
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literals: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> Bool {
        guard bytes.count == count else { return false }
        for offset in 0..<count where bytes[offset] != literals[start + offset] { return false }
        return true
    }
}
