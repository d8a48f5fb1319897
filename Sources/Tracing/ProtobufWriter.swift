/// The protobuf wire format (varints, fixed-width and length-delimited fields), enough to
/// write OTLP messages, into one growing buffer. Fields are written in field-number order,
/// defaults omitted, as a protobuf encoder does.
///
/// A nested message is written in place: its length goes first as a 5-byte varint (padded
/// with continuation bits, which every protobuf parser accepts: the wire format does not
/// require the shortest form), filled in once the message is written. That saves a buffer,
/// an allocation and a copy per nested message — a span has a dozen (attributes, values).
struct ProtobufWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    /// An empty writer with room for `capacity` bytes.
    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    private mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    /// An unsigned varint.
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// A varint field (`uint32`, `int64`, `bool`, an enum), omitted when zero.
    mutating func varintField(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .varint)
        varint(value)
    }

    /// Little-endian bytes of `value`, `count` of them.
    private mutating func littleEndian(_ value: UInt64, count: Int) {
        var rest = value
        for _ in 0..<count {
            bytes.append(UInt8(truncatingIfNeeded: rest))
            rest >>= 8
        }
    }

    /// A `fixed64` field, omitted when zero.
    mutating func fixed64Field(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .fixed64)
        littleEndian(value, count: 8)
    }

    /// A `fixed32` field, omitted when zero.
    mutating func fixed32Field(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        littleEndian(UInt64(value), count: 4)
    }

    /// A `double` field (written even when zero: it sits in a `oneof`).
    mutating func doubleField(_ field: Int, _ value: Double) {
        tag(field, .fixed64)
        littleEndian(value.bitPattern, count: 8)
    }

    /// A `bytes` field holding `values` as big-endian 8-byte words (a trace or span id).
    mutating func idField(_ field: Int, _ values: UInt64...) {
        tag(field, .lengthDelimited)
        varint(UInt64(values.count * 8))
        for value in values {
            var shift: UInt64 = 56
            while true {
                bytes.append(UInt8(truncatingIfNeeded: value >> shift))
                if shift == 0 { break }
                shift -= 8
            }
        }
    }

    /// A `string` field, omitted when empty.
    mutating func stringField(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        requiredStringField(field, value)
    }

    /// A string written even when empty (a `oneof` member).
    mutating func requiredStringField(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// A varint written even when zero (a `oneof` member).
    mutating func requiredVarintField(_ field: Int, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    /// A nested message field, written by `body` in place (always written, even when empty).
    mutating func messageField(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        tag(field, .lengthDelimited)
        let start = bytes.count
        bytes.append(contentsOf: [0x80, 0x80, 0x80, 0x80, 0x00] as [UInt8])
        body(&self)
        let length = bytes.count - start - 5
        precondition(length < 1 << 28, "message too large for a 5-byte length")
        for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: length >> (7 * index)) & 0x7F | 0x80 }
        bytes[start + 4] = UInt8(truncatingIfNeeded: length >> 28)
    }
}
