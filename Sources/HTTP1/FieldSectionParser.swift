/// Field names the head parsers need to interpret, recognised on the raw bytes while the
/// section is parsed so that no second case-insensitive search over the fields is needed.
struct KnownFields {
    enum Kind {
        case host, contentLength, transferEncoding, connection, expect
    }

    struct Entry {
        /// Number of lines with this name.
        var count = 0
        /// Index (into the field lines) of the first such line.
        var firstIndex = -1
        /// Byte range of the first line's (trimmed) value in the parsed buffer.
        var firstValue = 0..<0
    }

    private var entries = (Entry(), Entry(), Entry(), Entry(), Entry())

    subscript(kind: Kind) -> Entry {
        get {
            switch kind {
            case .host: return entries.0
            case .contentLength: return entries.1
            case .transferEncoding: return entries.2
            case .connection: return entries.3
            case .expect: return entries.4
            }
        }
        set {
            switch kind {
            case .host: entries.0 = newValue
            case .contentLength: entries.1 = newValue
            case .transferEncoding: entries.2 = newValue
            case .connection: entries.3 = newValue
            case .expect: entries.4 = newValue
            }
        }
    }

    func count(_ kind: Kind) -> Int { self[kind].count }

    @inline(__always)
    mutating func record(_ kind: Kind, index: Int, value: Range<Int>) {
        var entry = self[kind]
        if entry.count == 0 {
            entry.firstIndex = index
            entry.firstValue = value
        }
        entry.count += 1
        self[kind] = entry
    }

    /// ``classify(_:_:)`` out of line, for the lines a codec wrote (an HTTP/2 head's): a second
    /// inlined call site made the compiler leave `classify` out of line in the field-section
    /// scan of every HTTP/1.1 head (+250 instructions a request on the ruler).
    @inline(never)
    static func classifyApart(_ buf: UnsafeRawBufferPointer, _ name: Range<Int>) -> Kind? {
        classify(buf, name)
    }

    /// Classifies a (tchar-validated) field name. Dispatching on length and first letter
    /// keeps this to at most one short comparison per field line. (Transparent: with the
    /// 16-byte runs inlined beside it, `@inline(__always)` no longer kept it in the field
    /// section scan, and its call cost every line ~30 instructions.)
    @_transparent
    static func classify(_ buf: UnsafeRawBufferPointer, _ name: Range<Int>) -> Kind? {
        switch (name.count, buf[name.lowerBound] | 0x20) {
        case (4, 0x68): return ASCII.equalsLowercase(buf, name, "host") ? .host : nil
        case (6, 0x65): return ASCII.equalsLowercase(buf, name, "expect") ? .expect : nil
        case (10, 0x63): return ASCII.equalsLowercase(buf, name, "connection") ? .connection : nil
        case (14, 0x63): return ASCII.equalsLowercase(buf, name, "content-length") ? .contentLength : nil
        case (17, 0x74): return ASCII.equalsLowercase(buf, name, "transfer-encoding") ? .transferEncoding : nil
        default: return nil
        }
    }
}

/// One field line as offsets into the bytes it was parsed from: the name, and the value without
/// its surrounding whitespace.
public struct FieldLine: Sendable, Equatable {
    /// The field name's bytes.
    public let name: Range<Int>
    /// The trimmed field value's bytes.
    public let value: Range<Int>

    /// A line whose name and value are at these offsets.
    public init(name: Range<Int>, value: Range<Int>) {
        self.name = name
        self.value = value
    }
}

/// Parses a field section (RFC 9112 §5, RFC 9110 §5.5): field lines up to and including the
/// empty line that ends the section. Shared by request heads, response heads and trailers.
enum FieldSectionParser {
    /// Parses field lines starting at `start` into `fields` (Strings) and recording known names.
    ///
    /// - Returns: the offset just past the CRLF of the terminating empty line.
    static func parse(
        _ buf: UnsafeRawBufferPointer, from start: Int, maxFields: Int,
        into fields: inout [HTTPField], known: inout KnownFields
    ) throws(HTTPParseError) -> Int {
        var lines: [FieldLine] = []
        let end = try scan(buf, from: start, maxFields: maxFields, into: &lines, known: &known)
        fields.append(contentsOf: Self.fields(buf, lines))
        return end
    }

    /// The lines as Strings (names keep their case; values are valid UTF-8, checked by ``scan``).
    static func fields(_ buf: UnsafeRawBufferPointer, _ lines: [FieldLine]) -> [HTTPField] {
        var fields: [HTTPField] = []
        fields.reserveCapacity(lines.count)
        for line in lines {
            fields.append(HTTPField(name: ASCII.string(buf, line.name), value: ASCII.string(buf, line.value)))
        }
        return fields
    }

    /// The field section of a head: it starts at `start` and, when `exact`, must end exactly at
    /// the end of `head` (a head parser handed what ``HeadScanner`` measured); otherwise it ends
    /// at its empty line, before whatever follows in `head`. Fills `lines` and `known` in place
    /// (a returned tuple would be copied and destroyed once more).
    ///
    /// - Returns: the length of the head (the offset just past the empty line's CRLF).
    static func headSection(
        _ head: UnsafeRawBufferPointer, from start: Int, maxFields: Int, exact: Bool,
        lines: inout [FieldLine], known: inout KnownFields
    ) throws(HTTPParseError) -> Int {
        lines.reserveCapacity(16)
        let end = try scan(head, from: start, maxFields: maxFields, into: &lines, known: &known)
        if exact && end != head.count { throw .invalid("bytes after end of head") }
        return end
    }

    /// Parses field lines starting at `start` into offsets (`lines`, no String is made) and
    /// records known names; ``KnownFields`` indexes refer to `lines`.
    ///
    /// - Returns: the offset just past the CRLF of the terminating empty line.
    static func scan(
        _ buf: UnsafeRawBufferPointer, from start: Int, maxFields: Int,
        into lines: inout [FieldLine], known: inout KnownFields
    ) throws(HTTPParseError) -> Int {
        let n = buf.count
        var i = start
        while true {
            guard i < n else { throw .invalid("unterminated field section") }
            let first = buf[i]
            if first == ASCII.cr {
                guard i + 1 < n, buf[i + 1] == ASCII.lf else { throw .invalid("bare CR in field section") }
                return i + 2
            }
            // RFC 9112 §5.2: obs-fold is rejected (we are not a user agent, and unfolding
            // differently from the next hop is a smuggling risk).
            if ASCII.isOWS(first) { throw .invalid("obsolete line folding") }

            // field-name = token (RFC 9110 §5.1); no whitespace before the colon (RFC 9112 §5.1).
            let nameStart = i
            while i < n {
                // Skip letters, digits and dashes, 16 at a time; stop at the first other byte.
                i = ASCII.nameRunEnd(buf, from: i, to: n)
                guard i < n else { break }
                let b = buf[i]
                if b == ASCII.colon { break }
                guard ASCII.isTchar(b) else {
                    if ASCII.isOWS(b) { throw .invalid("whitespace in field name") }
                    if b == ASCII.cr || b == ASCII.lf { throw .invalid("field line without colon") }
                    throw .invalid("invalid character in field name")
                }
                i += 1
            }
            guard i < n else { throw .invalid("unterminated field section") }
            let nameRange = nameStart..<i
            if nameRange.isEmpty { throw .invalid("empty field name") }
            i += 1  // ':'

            // field-value = *field-content, surrounded by OWS (RFC 9110 §5.5). CR, LF, NUL and
            // other CTLs except HTAB are rejected; obs-text (0x80-0xFF) is allowed.
            while i < n, ASCII.isOWS(buf[i]) { i += 1 }
            let valueStart = i
            var high = false
            while true {
                // Skip plain bytes (0x20...0x7E), 16 at a time; stop at the first other byte.
                i = ASCII.plainRunEnd(buf, from: i, to: n)
                guard i < n else { throw .invalid("unterminated field section") }
                let b = buf[i]
                if b >= ASCII.sp && b != 0x7F {
                    if b >= 0x80 { high = true }
                } else if b == ASCII.cr {
                    break
                } else if b == ASCII.lf {
                    throw .invalid("bare LF in field section")
                } else if b != ASCII.htab {
                    throw .invalid("control character in field value")
                }
                i &+= 1
            }
            var valueEnd = i
            while valueEnd > valueStart, ASCII.isOWS(buf[valueEnd - 1]) { valueEnd -= 1 }
            guard i + 1 < n else { throw .invalid("unterminated field section") }
            guard buf[i + 1] == ASCII.lf else { throw .invalid("bare CR in field section") }
            i += 2

            if lines.count >= maxFields { throw .tooManyFields }
            let valueRange = valueStart..<valueEnd
            if high {
                // Values become Swift Strings (UTF-8) wherever they are read: refuse values that
                // would not round-trip byte for byte, rather than silently altering them.
                guard String(validating: UnsafeRawBufferPointer(rebasing: buf[valueRange]), as: UTF8.self) != nil else {
                    throw .invalid("field value is not valid UTF-8")
                }
            }
            if let kind = KnownFields.classify(buf, nameRange) {
                known.record(kind, index: lines.count, value: valueRange)
            }
            lines.append(FieldLine(name: nameRange, value: valueRange))
        }
    }
}
