/// Field names the head parsers need to interpret, recognised on the raw bytes while the
/// section is parsed so that no second case-insensitive search over the fields is needed.
struct KnownFields {
    enum Kind: Int {
        case host = 0, contentLength, transferEncoding, connection, expect
    }

    /// Number of lines per kind.
    private(set) var counts: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0)
    /// Index (into the field array) of the first line per kind, or -1.
    private(set) var firsts: (Int, Int, Int, Int, Int) = (-1, -1, -1, -1, -1)

    func count(_ kind: Kind) -> Int {
        switch kind {
        case .host: return counts.0
        case .contentLength: return counts.1
        case .transferEncoding: return counts.2
        case .connection: return counts.3
        case .expect: return counts.4
        }
    }

    func first(_ kind: Kind) -> Int {
        switch kind {
        case .host: return firsts.0
        case .contentLength: return firsts.1
        case .transferEncoding: return firsts.2
        case .connection: return firsts.3
        case .expect: return firsts.4
        }
    }

    mutating func record(_ kind: Kind, at index: Int) {
        switch kind {
        case .host: counts.0 += 1; if firsts.0 < 0 { firsts.0 = index }
        case .contentLength: counts.1 += 1; if firsts.1 < 0 { firsts.1 = index }
        case .transferEncoding: counts.2 += 1; if firsts.2 < 0 { firsts.2 = index }
        case .connection: counts.3 += 1; if firsts.3 < 0 { firsts.3 = index }
        case .expect: counts.4 += 1; if firsts.4 < 0 { firsts.4 = index }
        }
    }

    /// Classifies a (tchar-validated) field name. Dispatching on length first keeps this to
    /// at most one short comparison per field line.
    static func classify(_ buf: UnsafeRawBufferPointer, _ name: Range<Int>) -> Kind? {
        switch name.count {
        case 4: return ASCII.equalsLowercase(buf, name, "host") ? .host : nil
        case 6: return ASCII.equalsLowercase(buf, name, "expect") ? .expect : nil
        case 10: return ASCII.equalsLowercase(buf, name, "connection") ? .connection : nil
        case 14: return ASCII.equalsLowercase(buf, name, "content-length") ? .contentLength : nil
        case 17: return ASCII.equalsLowercase(buf, name, "transfer-encoding") ? .transferEncoding : nil
        default: return nil
        }
    }
}

/// Parses a field section (RFC 9112 §5, RFC 9110 §5.5): field lines up to and including the
/// empty line that ends the section. Shared by request heads, response heads and trailers.
enum FieldSectionParser {
    /// Parses field lines starting at `start`, appending to `fields` and recording known names.
    ///
    /// - Returns: the offset just past the CRLF of the terminating empty line.
    static func parse(
        _ buf: UnsafeRawBufferPointer, from start: Int, maxFields: Int,
        into fields: inout [HTTPField], known: inout KnownFields
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
            var valueEnd = i
            var high: UInt8 = 0
            while i < n {
                let b = buf[i]
                if b > ASCII.sp {
                    if b == 0x7F { throw .invalid("control character in field value") }
                    high |= b
                    valueEnd = i + 1
                } else if b == ASCII.cr {
                    break
                } else if b == ASCII.lf {
                    throw .invalid("bare LF in field section")
                } else if !ASCII.isOWS(b) {
                    throw .invalid("control character in field value")
                }
                i += 1
            }
            guard i + 1 < n else { throw .invalid("unterminated field section") }
            guard buf[i + 1] == ASCII.lf else { throw .invalid("bare CR in field section") }
            i += 2

            if fields.count >= maxFields { throw .tooManyFields }
            let valueRange = valueStart..<valueEnd
            let value = ASCII.string(buf, valueRange)
            if high & 0x80 != 0 {
                // Swift Strings are UTF-8; refuse values that would not round-trip byte for
                // byte, rather than silently altering what we forward.
                guard value.utf8.elementsEqual(UnsafeRawBufferPointer(rebasing: buf[valueRange])) else {
                    throw .invalid("field value is not valid UTF-8")
                }
            }
            if let kind = KnownFields.classify(buf, nameRange) {
                known.record(kind, at: fields.count)
            }
            fields.append(HTTPField(name: ASCII.string(buf, nameRange), value: value))
        }
    }
}
