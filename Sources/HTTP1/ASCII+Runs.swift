extension ASCII {
    /// Sixteen bytes, looked at together (SSE2 on x86-64, NEON on arm64).
    typealias Lanes = SIMD16<UInt8>

    /// Where the run of letters, digits and dashes that starts at `start` ends in `buf`: the
    /// offset of its first other byte (a field name's colon, or a rarer tchar), at most `end`.
    /// Sixteen bytes at a time while sixteen are left before `end`, then eight, then one: a
    /// field name is found in one look where the 8-byte step took two or three and its tail a
    /// look a byte.
    @inline(__always)
    static func nameRunEnd(_ buf: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var i = start
        while i &+ 16 <= end {
            let v = buf.loadUnaligned(fromByteOffset: i, as: Lanes.self)
            let letter = (v | Lanes(repeating: 0x20)) &- Lanes(repeating: 0x61) .<= Lanes(repeating: 25)
            let digit = v &- Lanes(repeating: 0x30) .<= Lanes(repeating: 9)
            let stop = firstCleared(letter .| digit .| (v .== Lanes(repeating: 0x2D)))
            if stop < 16 { return i &+ stop }
            i &+= 16
        }
        while i &+ 8 <= end {
            let stop = nameStopBytes(word(buf, i))
            if stop != 0 { return i &+ firstMarked(stop) }
            i &+= 8
        }
        while i < end, isNameRunByte(buf[i]) { i &+= 1 }
        return i
    }

    /// Where the run of plain text (SP and visible ASCII, 0x20...0x7E) that starts at `start`
    /// ends in `buf`: the offset of its first other byte (a field value's CR, or a control,
    /// DEL or a byte above 0x7F), at most `end`. As ``nameRunEnd(_:from:to:)``, 16, 8, then 1
    /// at a time.
    @inline(__always)
    static func plainRunEnd(_ buf: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var i = start
        while i &+ 16 <= end {
            let v = buf.loadUnaligned(fromByteOffset: i, as: Lanes.self)
            let stop = firstCleared(v &- Lanes(repeating: sp) .<= Lanes(repeating: 0x7E - sp))
            if stop < 16 { return i &+ stop }
            i &+= 16
        }
        while i &+ 8 <= end {
            let stop = plainStopBytes(word(buf, i))
            if stop != 0 { return i &+ firstMarked(stop) }
            i &+= 8
        }
        while i < end, buf[i] &- sp <= 0x7E - sp { i &+= 1 }
        return i
    }

    /// Where the run of request-target bytes (visible ASCII, 0x21...0x7E, but `#`) that starts
    /// at `start` ends in `buf`: the offset of its first other byte (the request line's SP, a
    /// control, a space, DEL, a byte above 0x7F or a fragment's `#`), at most `end`. Eight
    /// bytes at a time, then one.
    @inline(__always)
    static func targetRunEnd(_ buf: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var i = start
        while i &+ 8 <= end {
            let w = word(buf, i)
            let stop = hasLess(w, 0x21) | (w & highs) | hasByte(w, 0x7F) | hasByte(w, 0x23)
            if stop != 0 { return i &+ firstMarked(stop) }
            i &+= 8
        }
        while i < end, buf[i] &- 0x21 < 0x7F - 0x21, buf[i] != 0x23 { i &+= 1 }
        return i
    }

    /// The first lane of `mask` that is not set, or 16 when all are. (The mask read as two
    /// 64-bit words, a byte a lane: a lane-by-lane reduction is a call into the standard
    /// library's generic SIMD code.)
    @inline(__always)
    static func firstCleared(_ mask: SIMDMask<SIMD16<Int8>>) -> Int {
        let words = unsafeBitCast(mask, to: SIMD2<UInt64>.self)
        let low = ~words[0], high = ~words[1]
        if low != 0 { return low.trailingZeroBitCount &>> 3 }
        if high != 0 { return 8 &+ high.trailingZeroBitCount &>> 3 }
        return 16
    }

    /// A letter, digit or `-` (the bytes ``nameStopBytes(_:)`` leaves unmarked).
    @inline(__always)
    static func isNameRunByte(_ b: UInt8) -> Bool {
        (b | 0x20) &- 0x61 < 26 || isDigit(b) || b == 0x2D
    }
}
