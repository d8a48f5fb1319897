/// Writes a head's bytes into memory sized for them beforehand, noting where each field
/// line's name and value are: one pass of memory copies, where appending to an array checks
/// its uniqueness and capacity at every piece (~70 instructions a name or value). Writing past
/// the size stops the process: sizes and writes follow the same rules, so a difference is a
/// bug, not input. Its writes are `@inlinable`: called across modules, each was a call of
/// ~230 instructions a line.
public struct PresizedSectionWriter {
    /// Where the bytes go.
    @usableFromInline let base: UnsafeMutableRawPointer
    /// How many bytes fit.
    @usableFromInline let capacity: Int
    /// How many bytes were written.
    public var position: Int { written }
    /// The count behind ``position``, moved on by the (inlined) writes.
    @usableFromInline var written = 0

    /// A writer into `buffer` (all of it, from its start).
    @inlinable @inline(__always)
    public init(_ buffer: UnsafeMutableRawBufferPointer) {
        // (An empty buffer may have no address: nothing is written then.)
        base = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!
        capacity = buffer.count
    }

    /// Appends `bytes`.
    @inlinable @inline(__always)
    public mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(bytes.count <= capacity - position, "a head outgrew the size it was written into")
        (base + position).copyMemory(from: source, byteCount: bytes.count)
        written += bytes.count
    }

    /// Appends the bytes of `literal`.
    @inlinable @inline(__always)
    public mutating func put(_ literal: StaticString) {
        put(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends the UTF-8 bytes of `text`. (Labelled: unlabelled, a String overload is what a
    /// literal argument picks — String is the default literal type — and each `put("\r\n")`
    /// went through a String and its retain and release instead of the bytes of a constant.)
    public mutating func put(text: String) {
        text.withUTF8InPlace { put(UnsafeRawBufferPointer($0)) }
    }

    /// Appends one byte.
    @inlinable @inline(__always)
    public mutating func put(byte: UInt8) {
        precondition(position < capacity, "a head outgrew the size it was written into")
        base.storeBytes(of: byte, toByteOffset: position, as: UInt8.self)
        written += 1
    }

    /// Appends `name: value` and CRLF; returns where its name and value are (the value
    /// without whitespace around it, as the HTTP/1.1 parser notes it).
    @inlinable @inline(__always) @discardableResult
    public mutating func line(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> FieldLine {
        let nameStart = position
        put(name)
        let nameEnd = position
        put(": ")
        let valueStart = position
        put(value)
        let line = trimmedLine(name: nameStart..<nameEnd, value: valueStart..<position)
        put("\r\n")
        return line
    }

    /// Appends `name: value` and CRLF, and its offsets to `lines`.
    @inlinable @inline(__always)
    public mutating func line(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, into lines: inout [FieldLine]) {
        lines.append(line(name: name, value: value))
    }

    /// Appends `name: value` and CRLF, and its offsets to `lines`.
    @inlinable @inline(__always)
    public mutating func line(name: StaticString, value: UnsafeRawBufferPointer, into lines: inout [FieldLine]) {
        line(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value, into: &lines)
    }

    /// A written line's offsets, its value without whitespace around it (as HTTP/1.1 reads
    /// it; a value nghttp2 delivered has none, an authority may).
    @inlinable @inline(__always)
    public func trimmedLine(name: Range<Int>, value: Range<Int>) -> FieldLine {
        var start = value.lowerBound, end = value.upperBound
        while start < end, Self.isOWS(base.load(fromByteOffset: start, as: UInt8.self)) { start += 1 }
        while end > start, Self.isOWS(base.load(fromByteOffset: end - 1, as: UInt8.self)) { end -= 1 }
        return FieldLine(name: name, value: start..<end)
    }

    @inlinable @inline(__always)
    static func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// `bytes` holding exactly `size` bytes (to be overwritten by a writer), its capacity
    /// reused; `spare` more bytes of room after them (for what is appended later).
    public static func resize(_ bytes: inout [UInt8], to size: Int, spare: Int = 0) {
        if bytes.capacity < size + spare { bytes.reserveCapacity(size + spare) }
        if bytes.count > size {
            bytes.removeLast(bytes.count - size)
        } else if bytes.count < size {
            // Copied from zeros kept for it (a memory copy): appending `repeatElement(0, …)`
            // stored byte by byte, ~4 instructions a byte.
            while bytes.count < size {
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: zeros[..<min(zeros.count, size - bytes.count)]))
            }
        }
    }

    /// Zeros to grow arrays by (never written: shared by every thread unguarded).
    nonisolated(unsafe) private static let zeros = UnsafeRawBufferPointer(UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 16)
        .initializeMemory(as: UInt8.self, repeating: 0))
}
