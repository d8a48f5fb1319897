/// A W3C trace id: 16 bytes, never all zero when valid (W3C Trace Context §3.2.2.3).
public struct TraceID: Sendable, Hashable {
    /// Bytes 0–7, big-endian.
    public var high: UInt64
    /// Bytes 8–15, big-endian: the random part a ratio sampler looks at.
    public var low: UInt64

    /// A trace id from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Whether this is a usable id (the all-zero id is invalid).
    public var isValid: Bool { high != 0 || low != 0 }

    /// 32 lowercase hex digits.
    public var hex: String { HexID.hex(high) + HexID.hex(low) }
}

/// A W3C span (parent) id: 8 bytes, never all zero when valid.
public struct SpanID: Sendable, Hashable {
    /// The id, big-endian.
    public var value: UInt64

    /// A span id from its value.
    public init(_ value: UInt64) { self.value = value }

    /// Whether this is a usable id (the all-zero id is invalid).
    public var isValid: Bool { value != 0 }

    /// 16 lowercase hex digits.
    public var hex: String { HexID.hex(value) }
}

/// Hex forms of the 64-bit halves ids are made of.
enum HexID {
    /// 16 lowercase hex digits (``TraceParent``'s formatting).
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            TraceParent.writeHex(value, to: buffer.baseAddress!)
            return 16
        }
    }

    /// The value of 16 lowercase hex digits at `start` in `bytes`, or nil (an uppercase digit
    /// is invalid in `traceparent`).
    static func parse(_ bytes: UnsafeRawBufferPointer, at start: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<(start + 16) {
            guard let digit = digit(bytes[index]) else { return nil }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// A lowercase hex digit's value (uppercase is invalid in `traceparent`).
    @inline(__always)
    static func digit(_ byte: UInt8) -> UInt8? {
        if byte >= 0x30 && byte <= 0x39 { return byte &- 0x30 }
        if byte >= 0x61 && byte <= 0x66 { return byte &- 0x57 }
        return nil
    }
}
