/// Framing and connection rules shared by the request and response parsers
/// (RFC 9112 §6 and §9.3). They work on the raw head bytes recorded by ``KnownFields``.
struct MessageRules {
    /// The head being parsed.
    let buf: UnsafeRawBufferPointer
    /// Its field lines, as offsets into `buf`.
    let lines: [FieldLine]
    /// Where the interesting ones are.
    let known: KnownFields

    /// Parses a Content-Length list element: 1*DIGIT (RFC 9110 §8.6), at most 2^63-1 so that
    /// it fits every signed 64-bit consumer downstream. Signs, hex, spaces are rejected.
    static func contentLength(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty, range.count <= 19 else { return nil }  // 2^63-1 has 19 digits
        var value: UInt64 = 0
        for i in range {
            let b = buf[i]
            guard ASCII.isDigit(b) else { return nil }
            value = value &* 10 &+ UInt64(b &- 0x30)  // cannot overflow UInt64 with 19 digits
        }
        return value <= UInt64(Int64.max) ? value : nil
    }

    /// Content-Length of a request: exactly one line holding exactly one value. Requests are
    /// held to a stricter rule than RFC 9110 §8.6 (which allows `5, 5`) because a proxy that
    /// normalises differently from the origin is a smuggling vector.
    func requestContentLength() throws(HTTPParseError) -> UInt64 {
        let entry = known[.contentLength]
        guard entry.count == 1 else { throw .invalid("multiple Content-Length fields") }
        guard let value = Self.contentLength(buf, entry.firstValue) else { throw .invalid("invalid Content-Length") }
        return value
    }

    /// Content-Length of a response: every list element on every line must be a valid and
    /// identical value (RFC 9110 §8.6 allows repeated identical values; RFC 9112 §6.3 item 5
    /// says differing ones are unrecoverable).
    func responseContentLength() throws(HTTPParseError) -> UInt64 {
        // The usual head: one line, one number (all digits: a list of one element, itself).
        let entry = known[.contentLength]
        if entry.count == 1, let value = Self.contentLength(buf, entry.firstValue) { return value }
        var result: UInt64?
        var bad = false
        forEachElement(.contentLength, "content-length") { buf, range in
            guard let v = Self.contentLength(buf, range), result == nil || result == v else {
                bad = true
                return false
            }
            result = v
            return true
        }
        guard !bad, let result else { throw .invalid("invalid Content-Length") }
        return result
    }

    /// Transfer-Encoding of a request: the only coding we implement is chunked, so the list
    /// must be exactly `chunked` (RFC 9112 §6.1: chunked must be final and applied once; any
    /// other coding would deserve a 501, but we answer 400).
    func validateRequestTransferEncoding() throws(HTTPParseError) {
        var elements = 0
        var unsupported = false
        forEachElement(.transferEncoding, "transfer-encoding") { buf, range in
            elements += 1
            if !ASCII.equalsLowercase(buf, range, "chunked") { unsupported = true }
            return true
        }
        if elements == 0 { throw .invalid("empty Transfer-Encoding") }
        if unsupported { throw .invalid("unsupported transfer coding") }
        if elements > 1 { throw .invalid("chunked applied more than once") }
    }

    /// Transfer-Encoding of a response (RFC 9112 §6.3 items 3-4): `.chunked` when chunked is
    /// the final coding, `.untilClose` when it is not. chunked applied twice is rejected.
    func responseTransferEncoding() throws(HTTPParseError) -> BodyFraming {
        var elements = 0
        var chunkedCount = 0
        var lastIsChunked = false
        forEachElement(.transferEncoding, "transfer-encoding") { buf, range in
            elements += 1
            lastIsChunked = ASCII.equalsLowercase(buf, range, "chunked")
            if lastIsChunked { chunkedCount += 1 }
            return true
        }
        if elements == 0 { throw .invalid("empty Transfer-Encoding") }
        if chunkedCount > 1 { throw .invalid("chunked applied more than once") }
        return lastIsChunked ? .chunked : .untilClose
    }

    /// Persistence per RFC 9112 §9.3: HTTP/1.1 persists unless Connection has `close`;
    /// HTTP/1.0 persists only with `keep-alive` and no `close`.
    func keepAlive(_ version: HTTPVersion) -> Bool {
        // The usual head: no `Connection`, or one naming exactly `keep-alive` or `close`
        // (compared whole, not walked as a list).
        let entry = known[.connection]
        if entry.count == 0 { return version == .http1_1 }
        if entry.count == 1 {
            let value = entry.firstValue
            if value.count == 10 && ASCII.equalsLowercase(buf, value, "keep-alive") { return true }
            if value.count == 5 && ASCII.equalsLowercase(buf, value, "close") { return false }
        }
        var close = false
        var keepAlive = false
        forEachElement(.connection, "connection") { buf, range in
            switch range.count {
            case 5: if ASCII.equalsLowercase(buf, range, "close") { close = true }
            case 10: if ASCII.equalsLowercase(buf, range, "keep-alive") { keepAlive = true }
            default: break
            }
            return true
        }
        if close { return false }
        return version == .http1_1 || keepAlive
    }

    /// True if an Expect line lists `100-continue` (case-insensitive, RFC 9110 §10.1.1).
    func expectsContinue() -> Bool {
        var found = false
        forEachElement(.expect, "expect") { buf, range in
            found = ASCII.equalsLowercase(buf, range, "100-continue")
            return !found
        }
        return found
    }

    /// Calls `body` with every list element of every line of a known kind, in order, until it
    /// returns false. A single line (the common case) is read straight from the head bytes.
    private func forEachElement(
        _ kind: KnownFields.Kind, _ lowercaseName: StaticString, _ body: (UnsafeRawBufferPointer, Range<Int>) -> Bool
    ) {
        let entry = known[kind]
        if entry.count == 0 { return }
        if entry.count == 1 {
            ASCII.forEachListElement(buf, entry.firstValue, body)
            return
        }
        for index in entry.firstIndex..<lines.count where ASCII.equalsLowercase(buf, lines[index].name, lowercaseName) {
            if !ASCII.forEachListElement(buf, lines[index].value, body) { return }
        }
    }
}
