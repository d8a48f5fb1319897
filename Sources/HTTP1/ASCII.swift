/// Byte-level helpers shared by the parsers. Everything works on raw bytes so the hot paths
/// never touch `Character`s or per-byte `String`s.
@usableFromInline
enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let comma: UInt8 = 0x2C
    static let semicolon: UInt8 = 0x3B

    /// RFC 9110 §5.6.2 `tchar`: `!#$%&'*+-.^_`|~`, DIGIT, ALPHA; as a 128-bit set so the
    /// test is a shift and a mask instead of a chain of range checks.
    @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool {
        if b < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> b & 1 != 0 }
        if b < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (b &- 64) & 1 != 0 }
        return false
    }

    /// A byte of a strict reg-name or IPv4 address (RFC 3986 §3.2.2, without pct-encoding and
    /// sub-delims): ALPHA, DIGIT, `-`, `.`, `_`, `~`; a 128-bit set like ``isTchar(_:)``.
    @inline(__always)
    static func isHostByte(_ b: UInt8) -> Bool {
        if b < 64 { return (0x03FF_6000_0000_0000 as UInt64) >> b & 1 != 0 }
        if b < 128 { return (0x47FF_FFFE_87FF_FFFE as UInt64) >> (b &- 64) & 1 != 0 }
        return false
    }

    // MARK: SWAR (8 bytes at a time) helpers, see "Bit Twiddling Hacks" (haszero/hasless).

    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highs: UInt64 = 0x8080_8080_8080_8080

    @inline(__always)
    static func word(_ buf: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        buf.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
    }

    /// Whether `buf[range]` is only visible ASCII and SP (0x20...0x7E): a field value that
    /// needs no closer look. Read 16 bytes at a time (``plainRunEnd(_:from:to:)``), on past the
    /// range's end while `buf` goes on: a value a codec wrote is followed by its CRLF, where the
    /// run stops.
    @inline(__always)
    static func isPlainText(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        plainRunEnd(buf, from: range.lowerBound, to: buf.count) >= range.upperBound
    }

    /// Non-zero iff some byte of `w` is not plain text (a control, DEL or above 0x7F).
    @inline(__always)
    static func plainStopBytes(_ w: UInt64) -> UInt64 {
        hasLess(w, sp) | (w & highs) | hasByte(w, 0x7F)
    }

    /// Whether `buf[range]` is a token (RFC 9110 §5.6.2): letters, digits and dashes 16 bytes at
    /// a time (``nameRunEnd(_:from:to:)``, on past the range's end, where a name a codec wrote
    /// is followed by its colon), any other byte alone.
    @inline(__always)
    static func isToken(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard !range.isEmpty else { return false }
        var i = nameRunEnd(buf, from: range.lowerBound, to: buf.count)
        while i < range.upperBound {
            if !isTchar(buf[i]) { return false }
            i &+= 1
        }
        return true
    }

    /// Non-zero iff some byte of `w` is < `n` (exact as a boolean for n <= 128).
    @inline(__always)
    static func hasLess(_ w: UInt64, _ n: UInt8) -> UInt64 {
        (w &- ones &* UInt64(n)) & ~w & highs
    }

    /// Non-zero iff some byte of `w` equals `b`.
    @inline(__always)
    static func hasByte(_ w: UInt64, _ b: UInt8) -> UInt64 {
        let x = w ^ (ones &* UInt64(b))
        return (x &- ones) & ~x & highs
    }

    /// The offset (0...7) of the byte that set the lowest high bit of `mask`, a non-zero
    /// result of ``hasLess(_:_:)``, ``hasByte(_:_:)``, ``nameStopBytes(_:)`` or an OR of them:
    /// their lowest set bit is exact (a borrow only reaches bytes above the first match), so
    /// this is the first byte that matches; bytes above it may be false positives.
    @inline(__always)
    static func firstMarked(_ mask: UInt64) -> Int { mask.trailingZeroBitCount &>> 3 }

    /// The high bit of every byte of `w` that is in `low...high` (both in 1...127), exact per
    /// byte: the bytes are masked to 7 bits first, so no borrow or carry crosses a byte.
    @inline(__always)
    static func bytesIn(_ w: UInt64, _ low: UInt8, _ high: UInt8) -> UInt64 {
        let t = w & 0x7F7F_7F7F_7F7F_7F7F
        return ((ones &* UInt64(128 &+ high)) &- t) & ~w & (t &+ ones &* UInt64(128 &- low)) & highs
    }

    /// The high bit of every byte of `w` equal to `b`, exact per byte.
    @inline(__always)
    static func bytesEqual(_ w: UInt64, _ b: UInt8) -> UInt64 {
        let t = w ^ (ones &* UInt64(b))
        return ~(((t & 0x7F7F_7F7F_7F7F_7F7F) &+ 0x7F7F_7F7F_7F7F_7F7F) | t) & highs
    }

    /// The high bit of every byte of `w` that is not a letter, digit or `-` — the bytes of
    /// almost every field name — exact per byte. A field name scan skips 8 bytes at a time while
    /// this is zero and looks at the first marked byte alone (the colon, or a rarer tchar).
    @inline(__always)
    static func nameStopBytes(_ w: UInt64) -> UInt64 {
        let letters = bytesIn(w | 0x2020_2020_2020_2020, 0x61, 0x7A)
        return ~(letters | bytesIn(w, 0x30, 0x39) | bytesEqual(w, 0x2D)) & highs
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
    ///
    /// The bytes are copied, then lowercased 8 at a time: the high bit ``bytesIn(_:_:_:)`` marks
    /// on each `A`–`Z`, shifted down to 0x20, is the bit that lowercases it (per byte it cost
    /// ~13 instructions, a host per request).
    static func lowercasedString(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        if range.isEmpty { return "" }
        let source = UnsafeRawBufferPointer(rebasing: buf[range])
        let count = range.count
        return String(unsafeUninitializedCapacity: count) { out in
            let raw = UnsafeMutableRawBufferPointer(out)
            raw.copyMemory(from: source)
            guard let p = raw.baseAddress else { return 0 }
            var j = 0
            while j &+ 8 <= count {
                let w = p.loadUnaligned(fromByteOffset: j, as: UInt64.self)
                p.storeBytes(of: w | (bytesIn(w, 0x41, 0x5A) &>> 2), toByteOffset: j, as: UInt64.self)
                j &+= 8
            }
            while j < count {
                out[j] = lower(out[j])
                j &+= 1
            }
            return count
        }
    }

    /// ASCII-case-insensitive equality of two strings (RFC 9110 §5.1: field names are
    /// case-insensitive). Non-ASCII bytes must match exactly.
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Read in place (a `var` copy of each for `withUTF8` was a retain and a release each,
        // four reference counts a comparison: a gRPC call's trailers looked up cost 8).
        return a.withUTF8InPlace { x in
            b.withUTF8InPlace { y in
                for index in 0..<x.count where x[index] != y[index] && lower(x[index]) != lower(y[index]) { return false }
                return true
            }
        }
    }

    /// Whether `buf[range]` is exactly `literal`'s bytes (case-sensitive).
    @inline(__always)
    static func equals(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        matches(buf, range, literal, fold: 0)
    }

    /// Compares `buf[range]` with a lowercase ASCII literal made of letters, digits and `-`,
    /// ignoring ASCII case in `buf`.
    ///
    /// Uses `b | 0x20` instead of a full case fold: that maps only a letter's two cases, `0x0D`
    /// and `0x10...0x19` onto the literal's characters, and callers only pass bytes that were
    /// already validated to contain no control characters except HTAB.
    @inlinable @inline(__always)
    static func equalsLowercase(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        matches(buf, range, literal, fold: 0x20)
    }

    /// `buf[range]` against `literal`, both with `fold` OR-ed into every byte (0: exact), 8 bytes
    /// at a time.
    @inlinable @inline(__always)
    static func matches(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ literal: StaticString, fold: UInt8) -> Bool {
        let count = range.count
        guard count == literal.utf8CodeUnitCount, let base = buf.baseAddress else { return false }
        // ASCII literals always have a pointer representation.
        let lit = UnsafeRawPointer(literal.utf8Start)
        let p = base + range.lowerBound
        let folds = 0x0101_0101_0101_0101 &* UInt64(fold)
        var j = 0
        while j &+ 8 <= count {
            if p.loadUnaligned(fromByteOffset: j, as: UInt64.self) | folds != lit.loadUnaligned(fromByteOffset: j, as: UInt64.self) | folds {
                return false
            }
            j &+= 8
        }
        while j < count {
            if p.load(fromByteOffset: j, as: UInt8.self) | fold != lit.load(fromByteOffset: j, as: UInt8.self) | fold {
                return false
            }
            j &+= 1
        }
        return true
    }

    /// Calls `body` with each comma-separated element of `buf[range]`, OWS-trimmed, skipping
    /// empty elements (RFC 9110 §5.6.1 list syntax; quoted strings are not special-cased
    /// because this is only used for token and number lists). Stops early when `body`
    /// returns false, and then returns false.
    @discardableResult
    static func forEachListElement(
        _ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ body: (UnsafeRawBufferPointer, Range<Int>) -> Bool
    ) -> Bool {
        let n = range.upperBound
        var i = range.lowerBound
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

    /// ``forEachListElement(_:_:_:)`` over the UTF-8 of a String.
    @discardableResult
    static func forEachListElement(_ value: String, _ body: (UnsafeRawBufferPointer, Range<Int>) -> Bool) -> Bool {
        value.withUTF8InPlace { forEachListElement(UnsafeRawBufferPointer($0), 0..<$0.count, body) }
    }
}
