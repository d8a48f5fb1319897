import Tracing

/// Writes a message head into memory reserved for it (``EventLoop/EventBuffer/write(reserving:_:)``
/// or a new array): each piece is one bounds check and one `memcpy`, where appending to an
/// array costs a generic call and a capacity check per piece.
struct HeadWriter {
    private let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    private(set) var count = 0

    /// A writer filling `buffer` from its start.
    init(_ buffer: UnsafeMutableRawBufferPointer) {
        self.buffer = buffer
    }

    /// Writes `bytes`. Writing beyond the reserved space is a bug in the size computed for it.
    @inline(__always)
    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(count + bytes.count <= buffer.count, "head larger than the space reserved for it")
        (buffer.baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Writes `bytes`.
    @inline(__always)
    mutating func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Writes the bytes of a literal (a ``HeadBytes`` constant).
    @inline(__always)
    mutating func write(_ literal: StaticString) {
        write(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Writes the UTF-8 bytes of `text`. (Labelled, as `PresizedSectionWriter.put(text:)`:
    /// unlabelled, it is the overload a literal argument picks — String is the default literal
    /// type — and a literal would go through a String instead of its StaticString bytes.)
    @inline(__always)
    mutating func write(text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes the 55 bytes of `context`'s `traceparent` value in place.
    mutating func writeTraceParent(_ context: SpanContext) {
        precondition(count + TraceParent.length <= buffer.count, "head larger than the space reserved for it")
        TraceParent.write(context, into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]))
        count += TraceParent.length
    }

    /// Writes one byte.
    @inline(__always)
    mutating func write(byte: UInt8) {
        precondition(count < buffer.count, "head larger than the space reserved for it")
        buffer[count] = byte
        count += 1
    }

    /// Writes `value` in decimal (at most ``maxDecimalCount`` bytes).
    mutating func writeDecimal(_ value: UInt64) {
        var digits = 1
        var scale = value
        while scale >= 10 {
            scale /= 10
            digits += 1
        }
        precondition(count + digits <= buffer.count, "head larger than the space reserved for it")
        var rest = value
        var index = count + digits - 1
        repeat {
            buffer[index] = UInt8(0x30 + rest % 10)
            rest /= 10
            index -= 1
        } while rest > 0
        count += digits
    }

    /// The most bytes ``writeDecimal(_:)`` writes.
    static let maxDecimalCount = 20

    /// Makes an array of at most `maxCount` bytes with `body` writing them.
    static func bytes(maxCount: Int, _ body: (inout HeadWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: maxCount) { buffer, initialized in
            var writer = HeadWriter(UnsafeMutableRawBufferPointer(buffer))
            body(&writer)
            initialized = writer.count
        }
    }
}
