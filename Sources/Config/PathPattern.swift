/// A path a route's rule allows (`rules[].paths`): exact (`/v1/orders`), or a glob whose `*`
/// segment is any one segment and whose `**` segment is zero or more (`/v1/orders/**` matches
/// `/v1/orders`, `/v1/orders/` and everything below). Matched against the normalized path
/// (``HTTP1/PathNormalization``), case-sensitively, segment by segment.
public struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    /// One segment of the pattern.
    enum Segment: Sendable, Equatable {
        case literal(String)
        /// `*`: exactly one segment.
        case one
        /// `**`: zero or more segments.
        case any
    }

    let segments: [Segment]
    /// The pattern as written.
    public let description: String
    /// How it is matched, and its literal segments before a final `**` (or all of them).
    private let shape: Shape
    private let prefix: [String]

    private init(segments: [Segment], description: String) {
        self.segments = segments
        self.description = description
        let literal: (Segment) -> Bool = { if case .literal = $0 { true } else { false } }
        if segments.allSatisfy(literal) {
            shape = .literal
        } else if segments.last == .any, segments.dropLast().allSatisfy(literal) {
            shape = .literalThenAny
        } else {
            shape = .general
        }
        prefix = segments.compactMap { if case .literal(let text) = $0 { text } else { nil } }
    }

    /// For a literal pattern, the path it is; for a literal-then-`**` one, the path its literal
    /// segments make (`/v1/orders` of `/v1/orders/**`, empty for `/**`) and `thenAny`; nil for
    /// any other (``CompiledRules`` compares these as bytes, without splitting the path).
    var literalPath: (bytes: [UInt8], thenAny: Bool)? {
        guard shape != .general else { return nil }
        return (prefix.flatMap { [0x2F] + Array($0.utf8) }, shape == .literalThenAny)
    }

    /// Parses `text`; the error says what is wrong with it.
    public static func parse(_ text: String) -> Result<PathPattern, PatternError> {
        guard text.hasPrefix("/") else { return .failure(PatternError("a path pattern starts with /, as in /v1/orders/**")) }
        var segments: [Segment] = []
        for part in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            switch part {
            case "*": segments.append(.one)
            case "**": segments.append(.any)
            default:
                if part.contains("*") {
                    return .failure(PatternError("* stands for a whole segment (/a/*/b) and ** for any number of them (/a/**); found '\(part)'"))
                }
                if part == "." || part == ".." || part.contains("%") || part.contains("\\") {
                    return .failure(PatternError("write the path as it is matched: normalized, without dot segments, escapes or \\"))
                }
                segments.append(.literal(String(part)))
            }
        }
        // `/` alone is one empty segment: the root.
        return .success(PathPattern(segments: segments, description: text))
    }

    /// Whether the normalized `path` matches.
    public func matches(_ path: String) -> Bool {
        matches(segments: Self.segments(of: path))
    }

    /// The segments of a normalized path, as ``matches(segments:)`` takes them (split once for
    /// all of a route's rules).
    public static func segments(of path: String) -> [Substring] {
        path.utf8.dropFirst().isEmpty ? [""] : path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    }

    /// Whether a normalized path split by ``segments(of:)`` matches. Literal segments with at
    /// most a final `**` (most rules) are compared directly; any other pattern with a table,
    /// linear in pattern × path segments (not backtracking: a hostile path of many segments
    /// against several `**` stays cheap).
    public func matches(segments parts: [Substring]) -> Bool {
        switch shape {
        case .literal:
            return parts.count == prefix.count && zip(prefix, parts).allSatisfy { $0 == $1 }
        case .literalThenAny:
            return parts.count >= prefix.count && zip(prefix, parts).allSatisfy { $0 == $1 }
        case .general:
            break
        }
        // reachable[j]: the pattern's segments so far match the path's first j.
        var reachable = [Bool](repeating: false, count: parts.count + 1)
        var next = reachable
        reachable[0] = true
        for segment in segments {
            for j in next.indices { next[j] = false }
            switch segment {
            case .any:
                var seen = false
                for j in 0...parts.count {
                    seen = seen || reachable[j]
                    next[j] = seen
                }
            case .one:
                for j in 0..<parts.count where reachable[j] && !parts[j].isEmpty { next[j + 1] = true }
            case .literal(let text):
                for j in 0..<parts.count where reachable[j] && parts[j] == text { next[j + 1] = true }
            }
            swap(&reachable, &next)
        }
        return reachable[parts.count]
    }

    /// How a pattern is matched.
    private enum Shape: Sendable, Equatable { case literal, literalThenAny, general }

}
