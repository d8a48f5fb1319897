/// An incremental RESP2 reply parser: bytes in as they arrive (split anywhere), complete
/// replies out in order. A value type with no I/O, so it is tested byte by byte.
///
/// Limits keep a broken or hostile server from making the client allocate without bound:
/// bulk strings up to ``maxBulkLength``, arrays up to ``maxArrayCount`` elements and
/// ``maxDepth`` levels, lines up to ``maxLineLength``.
public struct RESPParser: Sendable {
    /// Why the byte stream is not RESP2; the connection must be dropped.
    public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong (never reply contents).
        public let description: String
    }

    /// Largest accepted bulk string.
    public static let maxBulkLength = 1 << 20
    /// Most elements in one array.
    public static let maxArrayCount = 4096
    /// Deepest nesting of arrays.
    public static let maxDepth = 8
    /// Longest status, error or length line.
    public static let maxLineLength = 64 * 1024

    private var buffer: [UInt8] = []
    private var start = 0

    /// Creates an empty parser.
    public init() {}

    /// Bytes received and not yet part of a returned reply.
    public var pendingCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete reply, or nil when more bytes are needed.
    public mutating func next() throws(ProtocolError) -> RESPValue? {
        var index = start
        guard let value = try parse(at: &index, depth: 0) else { return nil }
        start = index
        return value
    }

    private func parse(at index: inout Int, depth: Int) throws(ProtocolError) -> RESPValue? {
        guard index < buffer.count else { return nil }
        let type = buffer[index]
        var cursor = index + 1
        guard let line = try readLine(at: &cursor) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            index = cursor
            return .simpleString(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: "-"):
            index = cursor
            return .error(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: ":"):
            guard let number = Self.integer(line) else { throw ProtocolError(description: "malformed integer reply") }
            index = cursor
            return .integer(number)
        case UInt8(ascii: "$"):
            guard let length = Self.integer(line), length >= -1 else { throw ProtocolError(description: "malformed bulk length") }
            if length == -1 {
                index = cursor
                return .bulkString(nil)
            }
            guard length <= Self.maxBulkLength else { throw ProtocolError(description: "bulk string larger than \(Self.maxBulkLength) bytes") }
            let end = cursor + Int(length)
            guard end + 2 <= buffer.count else { return nil }
            guard buffer[end] == 13, buffer[end + 1] == 10 else { throw ProtocolError(description: "bulk string not followed by CRLF") }
            index = end + 2
            return .bulkString(Array(buffer[cursor..<end]))
        case UInt8(ascii: "*"):
            guard let count = Self.integer(line), count >= -1 else { throw ProtocolError(description: "malformed array length") }
            if count == -1 {
                index = cursor
                return .array(nil)
            }
            guard count <= Self.maxArrayCount else { throw ProtocolError(description: "array longer than \(Self.maxArrayCount) elements") }
            guard depth < Self.maxDepth else { throw ProtocolError(description: "arrays nested deeper than \(Self.maxDepth)") }
            var elements: [RESPValue] = []
            elements.reserveCapacity(Int(count))
            for _ in 0..<count {
                guard let element = try parse(at: &cursor, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            index = cursor
            return .array(elements)
        default:
            throw ProtocolError(description: "unknown reply type byte \(type)")
        }
    }

    /// The bytes up to CRLF (cursor moves past it), nil when the line is incomplete.
    private func readLine(at cursor: inout Int) throws(ProtocolError) -> ArraySlice<UInt8>? {
        var scan = cursor
        while scan < buffer.count {
            if buffer[scan] == 13 {
                guard scan + 1 < buffer.count else { return nil }
                guard buffer[scan + 1] == 10 else { throw ProtocolError(description: "CR not followed by LF") }
                let line = buffer[cursor..<scan]
                cursor = scan + 2
                return line
            }
            if buffer[scan] == 10 { throw ProtocolError(description: "LF without CR") }
            scan += 1
            if scan - cursor > Self.maxLineLength { throw ProtocolError(description: "line longer than \(Self.maxLineLength) bytes") }
        }
        return nil
    }

    private static func integer(_ line: ArraySlice<UInt8>) -> Int64? {
        guard !line.isEmpty, line.count <= 20 else { return nil }
        return Int64(String(decoding: line, as: UTF8.self))
    }
}
