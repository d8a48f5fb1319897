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

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] { HexID.bytes(high) + HexID.bytes(low) }

    /// 32 lowercase hex digits.
    public var hex: String { String(decoding: HexID.hex(high) + HexID.hex(low), as: UTF8.self) }
}

/// A W3C span (parent) id: 8 bytes, never all zero when valid.
public struct SpanID: Sendable, Hashable {
    /// The id, big-endian.
    public var value: UInt64

    /// A span id from its value.
    public init(_ value: UInt64) { self.value = value }

    /// Whether this is a usable id (the all-zero id is invalid).
    public var isValid: Bool { value != 0 }

    /// The 8 bytes, big-endian.
    public var bytes: [UInt8] { HexID.bytes(value) }

    /// 16 lowercase hex digits.
    public var hex: String { String(decoding: HexID.hex(value), as: UTF8.self) }
}

/// Hex and byte forms of the 64-bit halves ids are made of.
enum HexID {
    static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// 8 big-endian bytes.
    static func bytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
    }

    /// 16 lowercase hex digits.
    static func hex(_ value: UInt64) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16)
        append(value, to: &out)
        return out
    }

    /// Appends 16 lowercase hex digits of `value` to `out`.
    @inline(__always)
    static func append(_ value: UInt64, to out: inout [UInt8]) {
        var shift: UInt64 = 60
        while true {
            out.append(digits[Int(truncatingIfNeeded: (value >> shift) & 0xF)])
            if shift == 0 { break }
            shift -= 4
        }
    }

    /// The value of 16 lowercase hex digits at `start` in `bytes`, or nil (an uppercase digit
    /// is invalid in `traceparent`).
    static func parse(_ bytes: UnsafeRawBufferPointer, at start: Int) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<(start + 16) {
            let byte = bytes[index]
            let digit: UInt8
            if byte >= 0x30 && byte <= 0x39 {
                digit = byte &- 0x30
            } else if byte >= 0x61 && byte <= 0x66 {
                digit = byte &- 0x57
            } else {
                return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}
