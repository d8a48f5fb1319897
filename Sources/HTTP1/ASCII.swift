/// Byte-level helpers shared by the parsers. Everything works on raw bytes so the hot paths
/// never touch `Character`s or per-byte `String`s.
enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B

    /// RFC 9110 §5.6.2 `tchar`: `!#$%&'*+-.^_`|~`, DIGIT, ALPHA.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A:
            return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E:
            return true
        default:
            return false
        }
    }

    /// SP or HTAB (RFC 9110 §5.6.3 OWS).
    @inline(__always)
    static func isOWS(_ b: UInt8) -> Bool { b == sp || b == htab }

    @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    /// Value of a hex digit (either case), or nil.
    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt64? {
        switch b {
        case 0x30...0x39: return UInt64(b &- 0x30)
        case 0x41...0x46: return UInt64(b &- 0x41 &+ 10)
        case 0x61...0x66: return UInt64(b &- 0x61 &+ 10)
        default: return nil
        }
    }

    @inline(__always)
    static func lower(_ b: UInt8) -> UInt8 {
        b &- 0x41 < 26 ? b | 0x20 : b
    }

    /// Builds a String from `buf[range]` (one copy, no per-byte work beyond UTF-8 validation).
    static func string(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        if range.isEmpty { return "" }
        let source = UnsafeRawBufferPointer(rebasing: buf[range])
        return String(unsafeUninitializedCapacity: range.count) { out in
            UnsafeMutableRawBufferPointer(out).copyMemory(from: source)
            return range.count
        }
    }

    /// Like ``string(_:_:)`` but ASCII-lowercased.
    static func lowercasedString(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        if range.isEmpty { return "" }
        return String(unsafeUninitializedCapacity: range.count) { out in
            var j = 0
            for i in range {
                out[j] = lower(buf[i])
                j += 1
            }
            return j
        }
    }

    /// ASCII-case-insensitive equality of two strings (RFC 9110 §5.1: field names are
    /// case-insensitive). Non-ASCII bytes must match exactly.
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let au = a.utf8, bu = b.utf8
        guard au.count == bu.count else { return false }
        for (x, y) in zip(au, bu) where x != y {
            if lower(x) != lower(y) { return false }
        }
        return true
    }

    /// Compares `buf[range]` with a lowercase ASCII literal, ignoring ASCII case in `buf`.
    static func equalsLowercase(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        return literal.withUTF8Buffer { lit in
            var j = 0
            for i in range {
                if lower(buf[i]) != lit[j] { return false }
                j += 1
            }
            return true
        }
    }

    /// Calls `body` with each comma-separated element of `value`, OWS-trimmed, skipping empty
    /// elements (RFC 9110 §5.6.1 list syntax; quoted strings are not special-cased because
    /// this is only used for token lists). Stops early when `body` returns false.
    /// Returns false if it was stopped early.
    @discardableResult
    static func forEachListElement(_ value: String, _ body: (UnsafeRawBufferPointer, Range<Int>) -> Bool) -> Bool {
        var copy = value
        return copy.withUTF8 { utf8 in
            let buf = UnsafeRawBufferPointer(utf8)
            let n = buf.count
            var i = 0
            while i < n {
                var start = i
                while start < n, isOWS(buf[start]) { start += 1 }
                var end = start
                while end < n, buf[end] != comma { end += 1 }
                let next = end + 1
                while end > start, isOWS(buf[end - 1]) { end -= 1 }
                if end > start, !body(buf, start..<end) { return false }
                i = next
            }
            return true
        }
    }

    /// True if any list element of `value` equals the lowercase literal `token`, ignoring case.
    static func listContains(_ value: String, _ token: StaticString) -> Bool {
        var found = false
        forEachListElement(value) { buf, range in
            if equalsLowercase(buf, range, token) { found = true; return false }
            return true
        }
        return found
    }
}
