/// The protobuf wire format (varints, fixed-width and length-delimited fields), enough to
/// write OTLP messages. Fields are written in field-number order, defaults omitted, as a
/// protobuf encoder does.
struct ProtobufWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    /// An empty writer.
    init() {}

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

    /// A `fixed64` field, omitted when zero.
    mutating func fixed64Field(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .fixed64)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// A `fixed32` field, omitted when zero.
    mutating func fixed32Field(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// A `double` field (written even when zero: it sits in a `oneof`).
    mutating func doubleField(_ field: Int, _ value: Double) {
        tag(field, .fixed64)
        let bits = value.bitPattern
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }

    /// A `bytes` field, omitted when empty.
    mutating func bytesField(_ field: Int, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes += value
    }

    /// A `string` field, omitted when empty.
    mutating func stringField(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        bytes += value.utf8
    }

    /// A string written even when empty (a `oneof` member).
    mutating func requiredStringField(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.utf8.count))
        bytes += value.utf8
    }

    /// A varint written even when zero (a `oneof` member).
    mutating func requiredVarintField(_ field: Int, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    /// A nested message field, written by `body` (always written, even when empty).
    mutating func messageField(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        tag(field, .lengthDelimited)
        varint(UInt64(nested.bytes.count))
        bytes += nested.bytes
    }
}
