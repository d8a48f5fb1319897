/// Framing and connection rules shared by the request and response parsers
/// (RFC 9112 §6 and §9.3).
enum MessageRules {
    /// Parses a Content-Length list element: 1*DIGIT (RFC 9110 §8.6), at most 2^63-1 so that
    /// it fits every signed 64-bit consumer downstream. Signs, hex, spaces are rejected.
    static func contentLength(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty else { return nil }
        var value: UInt64 = 0
        for i in range {
            let b = buf[i]
            guard ASCII.isDigit(b) else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(b &- 0x30))
            guard !o1, !o2, s <= UInt64(Int64.max) else { return nil }
            value = s
        }
        return value
    }

    /// Content-Length of a request: exactly one line holding exactly one value. Requests are
    /// held to a stricter rule than RFC 9110 §8.6 (which allows `5, 5`) because a proxy that
    /// normalises differently from the origin is a smuggling vector.
    static func requestContentLength(_ fields: [HTTPField], _ known: KnownFields) throws(HTTPParseError) -> UInt64 {
        guard known.count(.contentLength) == 1 else { throw .invalid("multiple Content-Length fields") }
        var value = fields[known.first(.contentLength)].value
        let parsed: UInt64? = value.withUTF8 { contentLength(UnsafeRawBufferPointer($0), 0..<$0.count) }
        guard let parsed else { throw .invalid("invalid Content-Length") }
        return parsed
    }

    /// Content-Length of a response: every list element on every line must be a valid and
    /// identical value (RFC 9110 §8.6 allows repeated identical values; RFC 9112 §6.3 item 5
    /// says differing ones are unrecoverable).
    static func responseContentLength(_ fields: [HTTPField], _ known: KnownFields) throws(HTTPParseError) -> UInt64 {
        var result: UInt64?
        var bad = false
        forEach(.contentLength, "content-length", fields, known) { value in
            ASCII.forEachListElement(value) { buf, range in
                guard let v = contentLength(buf, range), result == nil || result == v else {
                    bad = true
                    return false
                }
                result = v
                return true
            }
            return !bad
        }
        guard !bad, let result else { throw .invalid("invalid Content-Length") }
        return result
    }

    /// Transfer-Encoding of a request: the only coding we implement is chunked, so the list
    /// must be exactly `chunked` (RFC 9112 §6.1: chunked must be final and applied once; any
    /// other coding would be answered with 501, but we treat it as a 400).
    static func validateRequestTransferEncoding(_ fields: [HTTPField], _ known: KnownFields) throws(HTTPParseError) {
        var elements = 0
        var unsupported = false
        forEach(.transferEncoding, "transfer-encoding", fields, known) { value in
            ASCII.forEachListElement(value) { buf, range in
                elements += 1
                if !ASCII.equalsLowercase(buf, range, "chunked") { unsupported = true }
                return true
            }
            return true
        }
        if elements == 0 { throw .invalid("empty Transfer-Encoding") }
        if unsupported { throw .invalid("unsupported transfer coding") }
        if elements > 1 { throw .invalid("chunked applied more than once") }
    }

    /// Transfer-Encoding of a response (RFC 9112 §6.3 items 3-4): `.chunked` when chunked is
    /// the final coding, `.untilClose` when it is not. chunked applied twice is rejected.
    static func responseTransferEncoding(_ fields: [HTTPField], _ known: KnownFields) throws(HTTPParseError) -> BodyFraming {
        var elements = 0
        var chunkedCount = 0
        var lastIsChunked = false
        forEach(.transferEncoding, "transfer-encoding", fields, known) { value in
            ASCII.forEachListElement(value) { buf, range in
                elements += 1
                lastIsChunked = ASCII.equalsLowercase(buf, range, "chunked")
                if lastIsChunked { chunkedCount += 1 }
                return true
            }
            return true
        }
        if elements == 0 { throw .invalid("empty Transfer-Encoding") }
        if chunkedCount > 1 { throw .invalid("chunked applied more than once") }
        return lastIsChunked ? .chunked : .untilClose
    }

    /// Persistence per RFC 9112 §9.3: HTTP/1.1 persists unless Connection has `close`;
    /// HTTP/1.0 persists only with `keep-alive` and no `close`.
    static func keepAlive(_ version: HTTPVersion, _ fields: [HTTPField], _ known: KnownFields) -> Bool {
        var close = false
        var keepAlive = false
        if known.count(.connection) > 0 {
            forEach(.connection, "connection", fields, known) { value in
                ASCII.forEachListElement(value) { buf, range in
                    if ASCII.equalsLowercase(buf, range, "close") { close = true }
                    if ASCII.equalsLowercase(buf, range, "keep-alive") { keepAlive = true }
                    return true
                }
                return true
            }
        }
        if close { return false }
        return version == .http1_1 || keepAlive
    }

    /// True if an Expect line lists `100-continue` (case-insensitive, RFC 9110 §10.1.1).
    static func expectsContinue(_ fields: [HTTPField], _ known: KnownFields) -> Bool {
        guard known.count(.expect) > 0 else { return false }
        var found = false
        forEach(.expect, "expect", fields, known) { value in
            found = ASCII.listContains(value, "100-continue")
            return !found
        }
        return found
    }

    /// Calls `body` with the value of every line of a known kind, in order; stops when it
    /// returns false. Uses the recorded first index/count to skip unrelated lines.
    static func forEach(
        _ kind: KnownFields.Kind, _ lowercaseName: String, _ fields: [HTTPField], _ known: KnownFields,
        _ body: (String) -> Bool
    ) {
        let count = known.count(kind)
        guard count > 0 else { return }
        let first = known.first(kind)
        if count == 1 {
            _ = body(fields[first].value)
            return
        }
        for index in first..<fields.count where ASCII.equalsIgnoringCase(fields[index].name, lowercaseName) {
            if !body(fields[index].value) { return }
        }
    }
}
