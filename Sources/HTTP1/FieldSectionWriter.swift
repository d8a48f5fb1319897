/// Builds the field section of an edited request head (``RequestHead/edited(target:_:)``):
/// lines copied from the original or written anew, laid out as `name: value` CRLF lines as a
/// parsed head's are, so a proxy copies runs of them as they are.
public struct FieldSectionWriter {
    var bytes: [UInt8] = []
    var lines: [FieldLine] = []
    var connectionLines = 0

    init(capacity: Int, lineCount: Int) {
        bytes.reserveCapacity(capacity)
        lines.reserveCapacity(lineCount)
    }

    /// Copies `line` of `section` unchanged.
    public mutating func copy(_ line: FieldLine, from section: FieldSectionView) {
        append(name: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]),
               value: UnsafeRawBufferPointer(rebasing: section.bytes[line.value]))
    }

    /// Appends a line; `name` must be a field name and `value` a valid field value (the caller
    /// checked them: an edit writes only names and values the configuration validated or the
    /// app already sent).
    public mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let nameEnd = bytes.count
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        lines.append(FieldLine(name: nameStart..<nameEnd, value: valueStart..<bytes.count))
        bytes.append(UInt8(ascii: "\r"))
        bytes.append(UInt8(ascii: "\n"))
        if name.count == 10, name.lazy.map({ $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }).elementsEqual("connection".utf8) { connectionLines += 1 }
    }

    /// Appends a line from byte arrays (see ``append(name:value:)-(UnsafeRawBufferPointer,_)``).
    public mutating func append(name: [UInt8], value: [UInt8]) {
        name.withUnsafeBytes { name in value.withUnsafeBytes { append(name: name, value: $0) } }
    }
}

extension RequestHead {
    /// A new head with `target` and the field lines `build` writes (reading this head's lines
    /// in place); method, version, framing, Host and the connection's flags stay this head's.
    /// For the rare request whose fields a proxy must change, not remove or add at the ends
    /// (a placeholder swapped for a credential).
    public func edited(target: RequestTarget, _ build: (FieldSectionView, inout FieldSectionWriter) -> Void) -> RequestHead {
        var writer = FieldSectionWriter(capacity: fieldBytes.count + 256, lineCount: fieldLines.count + 1)
        withFieldSection { build($0, &writer) }
        writer.bytes.append(UInt8(ascii: "\r"))
        writer.bytes.append(UInt8(ascii: "\n"))
        return RequestHead(method: method, target: target, version: version, fieldBytes: writer.bytes, fieldLines: writer.lines,
                           connectionLines: writer.connectionLines, framing: framing, host: host, keepAlive: keepAlive,
                           expectsContinue: expectsContinue)
    }
}
