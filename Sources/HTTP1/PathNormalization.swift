/// The normalized form of a request path, as a route's rules match it and as it is forwarded, so
/// the upstream sees exactly what was checked (issue 68): runs of slashes merged, percent-encoded
/// unreserved characters decoded and other escapes in uppercase hex (RFC 3986 §6.2.2), dot
/// segments removed (§5.2.4), a trailing slash kept.
///
/// Paths an upstream could read otherwise than the rules did are refused, not normalized: an
/// encoded `/` or `\` (`%2F`, `%5C`), a raw `\` (IIS and others read it as `/`), an encoded dot
/// segment (`%2e%2E`), a dot segment hidden behind `;` parameters (`..;`, which Tomcat reads as
/// `..`), an encoded NUL, and a malformed escape.
public enum PathNormalization {
    /// What became of a path.
    public enum Outcome: Equatable, Sendable {
        /// The path to match and forward.
        case normalized(String)
        /// Refused, with why (for a 400's details).
        case refused(String)
    }

    /// `path` (the target before `?`, starting with `/`) normalized or refused.
    public static func normalize(_ path: Substring) -> Outcome {
        guard path.utf8.first == slash else { return .refused("the path does not start with /") }
        if isAlreadyNormal(path.utf8) { return .normalized(String(path)) }
        let bytes = Array(path.utf8)
        var segments: [[UInt8]] = []
        var current: [UInt8] = []
        var currentHadEscape = false
        var index = 1
        func finish(_ segments: inout [[UInt8]], last: Bool) -> String? {
            if let problem = hiddenDotSegment(current, escaped: currentHadEscape) { return problem }
            switch current {
            case [dot]:
                if last { segments.append([]) }
            case [dot, dot]:
                if !segments.isEmpty { segments.removeLast() }
                if last { segments.append([]) }
            case []:
                // An empty segment: a merged slash, or the trailing slash when it is the last.
                if last && !segments.isEmpty { segments.append([]) }
            default:
                segments.append(current)
            }
            current = []
            currentHadEscape = false
            return nil
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case slash:
                if let problem = finish(&segments, last: false) { return .refused(problem) }
            case backslash:
                return .refused("the path holds a \\ (read as / by some servers)")
            case percent:
                guard index + 2 < bytes.count, let high = PercentDecoding.hexValue(bytes[index + 1]),
                      let low = PercentDecoding.hexValue(bytes[index + 2]) else {
                    return .refused("the path holds a malformed percent-escape")
                }
                let decoded = high << 4 | low
                switch decoded {
                case slash, backslash: return .refused("the path holds an encoded / or \\ (%2F, %5C)")
                case 0: return .refused("the path holds an encoded NUL (%00)")
                default: break
                }
                currentHadEscape = true
                if PercentDecoding.isUnreserved(decoded) {
                    current.append(decoded)
                } else {
                    current += [percent, upperHex(decoded >> 4), upperHex(decoded & 0x0F)]
                }
                index += 2
            default:
                current.append(byte)
            }
            index += 1
        }
        if let problem = finish(&segments, last: true) { return .refused(problem) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for segment in segments {
            out.append(slash)
            out += segment
        }
        if out.isEmpty { out = [slash] }
        return .normalized(String(decoding: out, as: UTF8.self))
    }

    /// Whether the path whose bytes are `path` is already in normal form, so it is matched and
    /// forwarded as it is — most paths: starting with `/`, no escape, no `\\`, no empty segment
    /// and no segment starting with a dot. One pass over the bytes, nothing copied.
    public static func isNormal(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        path.first == slash && isAlreadyNormal(path)
    }

    @inline(__always)
    private static func isAlreadyNormal<Bytes: Sequence<UInt8>>(_ path: Bytes) -> Bool {
        var previous: UInt8 = 0
        for byte in path {
            if byte == percent || byte == backslash { return false }
            if previous == slash && (byte == slash || byte == dot) { return false }
            previous = byte
        }
        return true
    }

    /// Why a segment must not be normalized: a dot segment spelled with escapes (its meaning
    /// depends on who decodes first), or one behind `;` parameters.
    private static func hiddenDotSegment(_ segment: [UInt8], escaped: Bool) -> String? {
        if escaped && (segment == [dot] || segment == [dot, dot]) {
            return "the path holds an encoded dot segment (%2E)"
        }
        if let semicolon = segment.firstIndex(of: UInt8(ascii: ";")) {
            let head = segment[..<semicolon]
            if head.elementsEqual([dot]) || head.elementsEqual([dot, dot]) {
                return "the path holds a dot segment with ; parameters (..;)"
            }
        }
        return nil
    }


    private static func upperHex(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10 }

    private static let slash = UInt8(ascii: "/")
    private static let backslash = UInt8(ascii: "\\")
    private static let percent = UInt8(ascii: "%")
    private static let dot = UInt8(ascii: ".")
}
