/// The W3C Trace Context `traceparent` field: `version-traceid-parentid-flags`, e.g.
/// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01` (W3C Trace Context Level 1 §3.2).
public enum TraceParent {
    /// The length of a version 00 value.
    public static let length = 55

    /// The context in `value`, or nil when it is not a valid `traceparent`: version `ff`, a
    /// version 00 value of another length, uppercase or non-hex digits, an all-zero trace or
    /// parent id. A higher version is read by its version 00 prefix, as §4.3 says, when the
    /// prefix is followed by the end or a `-`.
    public static func parse(_ value: some StringProtocol) -> SpanContext? {
        var text = String(value)
        return text.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The context in `bytes` (see ``parse(_:)``).
    public static func parse(bytes: UnsafeRawBufferPointer) -> SpanContext? {
        // Leading and trailing optional whitespace of the field value is not part of it.
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        let count = end - start
        guard count >= length else { return nil }
        guard let versionHigh = HexID.digit(bytes[start]), let versionLow = HexID.digit(bytes[start + 1]) else { return nil }
        let version = versionHigh << 4 | versionLow
        guard version != 0xFF else { return nil }
        if version == 0 {
            guard count == length else { return nil }
        } else if count > length {
            guard bytes[start + length] == 0x2D else { return nil }
        }
        guard bytes[start + 2] == 0x2D, bytes[start + 35] == 0x2D, bytes[start + 52] == 0x2D,
              let high = HexID.parse(bytes, at: start + 3), let low = HexID.parse(bytes, at: start + 19),
              let parent = HexID.parse(bytes, at: start + 36),
              let flagsHigh = HexID.digit(bytes[start + 53]), let flagsLow = HexID.digit(bytes[start + 54]) else { return nil }
        let traceID = TraceID(high: high, low: low)
        let spanID = SpanID(parent)
        guard traceID.isValid, spanID.isValid else { return nil }
        return SpanContext(traceID: traceID, spanID: spanID, sampled: (flagsHigh << 4 | flagsLow) & 1 == 1, isRemote: true)
    }

    /// The version 00 value for `context`, as 55 bytes.
    public static func bytes(_ context: SpanContext) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            write(context, into: UnsafeMutableRawBufferPointer(buffer))
            count = length
        }
    }

    /// Writes the 55 bytes of the version 00 value for `context` at the start of `buffer`
    /// (which has room for them): a table lookup per digit, no allocation.
    @inlinable
    public static func write(_ context: SpanContext, into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= length, "no room for a traceparent")
        let out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        out[0] = 0x30
        out[1] = 0x30
        out[2] = 0x2D
        writeHex(context.traceID.high, to: out + 3)
        writeHex(context.traceID.low, to: out + 19)
        out[35] = 0x2D
        writeHex(context.spanID.value, to: out + 36)
        out[52] = 0x2D
        out[53] = 0x30
        out[54] = context.sampled ? 0x31 : 0x30
    }

    /// 16 lowercase hex digits of `value` at `out`: eight digits at a time in one 64-bit word
    /// (each nibble spread into a byte, then `0`–`9` or `a`–`f` added to all eight at once).
    @inlinable @inline(__always)
    static func writeHex(_ value: UInt64, to out: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(out).storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value >> 32)), as: UInt64.self)
        UnsafeMutableRawPointer(out + 8).storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value)), as: UInt64.self)
    }

    /// The 8 hex digits of `value` as the bytes of a word, in memory order (first digit first).
    @inlinable @inline(__always)
    static func hexDigits(_ value: UInt32) -> UInt64 {
        var spread = UInt64(value)
        spread = (spread & 0xFFFF_0000) << 16 | spread & 0xFFFF
        spread = (spread & 0x0000_FF00_0000_FF00) << 8 | spread & 0x0000_00FF_0000_00FF
        spread = (spread & 0x00F0_00F0_00F0_00F0) << 4 | spread & 0x000F_000F_000F_000F
        // 1 in each byte whose nibble is 10 or more: those get 'a' - '0' - 10 = 39 more.
        let letters = (spread &+ 0x0606_0606_0606_0606) >> 4 & 0x0101_0101_0101_0101
        let digits = spread &+ 0x3030_3030_3030_3030 &+ letters &* 39
        // The most significant digit is in the highest byte: swapped, it is stored first.
        return UInt64(bigEndian: digits)
    }

    /// The version 00 value for `context`.
    public static func string(_ context: SpanContext) -> String { String(decoding: bytes(context), as: UTF8.self) }
}
