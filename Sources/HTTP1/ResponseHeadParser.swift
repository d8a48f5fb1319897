/// Parses a response head (RFC 9112 §4 and §5) and derives framing and persistence.
public enum ResponseHeadParser {
    /// Whether a `status` response to a `requestMethod` request has no content, whatever its
    /// head says (RFC 9110 §6.4.1): a response to `HEAD`, and every 1xx, 204 and 304. The one
    /// place this rule is written (parsing a response, reading an HTTP/2 upstream's response
    /// as HTTP/1.1, answering locally).
    @inlinable
    public static func hasNoContent(status: Int, requestMethod: String) -> Bool {
        // (Length and first letter first: comparing Strings that differ is an out-of-line call,
        // and `POST` is as long as `HEAD`.)
        (requestMethod.utf8.count == 4 && requestMethod.utf8.first == UInt8(ascii: "H") && requestMethod == "HEAD")
            || status < 200 || status == 204 || status == 304
    }

    /// Parses a response head.
    ///
    /// Framing follows RFC 9112 §6.3: a response to HEAD, a 1xx/204/304 response, or a 2xx
    /// response to CONNECT has no body; otherwise Transfer-Encoding with chunked as the final
    /// coding is `.chunked`, any other Transfer-Encoding is `.untilClose`; Transfer-Encoding
    /// together with Content-Length is rejected; a valid Content-Length (repeated identical
    /// values allowed) gives `.contentLength`; otherwise `.untilClose`.
    ///
    /// - Parameters:
    ///   - head: exactly the bytes ``HeadScanner`` measured.
    ///   - requestMethod: the method of the request this answers (case-sensitive).
    ///   - maxFields: more field lines than this throw ``HTTPParseError/tooManyFields``.
    /// - Throws: ``HTTPParseError/tooManyFields``, or ``HTTPParseError/invalid(_:)`` for a bad
    ///   status line, field syntax, Transfer-Encoding with Content-Length (or in HTTP/1.0),
    ///   or invalid/conflicting Content-Length values.
    public static func parse(
        _ head: UnsafeRawBufferPointer, requestMethod: String, maxFields: Int = 100
    ) throws(HTTPParseError) -> ResponseHead {
        try view(head, requestMethod: requestMethod, maxFields: maxFields).resolved()
    }

    /// Parses a response head with exactly the rules of ``parse(_:requestMethod:maxFields:)``
    /// into offsets over `head`, making no String: for a proxy that copies the forwarded lines
    /// as bytes. The view is valid only while `head` is.
    ///
    /// `reusing`: an array to fill with the field lines (emptied first), so that a caller that
    /// gives back ``ResponseHeadView/fieldLines`` once done parses every head without allocating.
    public static func view(
        _ head: UnsafeRawBufferPointer, requestMethod: String, maxFields: Int = 100, reusing lines: consuming [FieldLine] = []
    ) throws(HTTPParseError) -> ResponseHeadView {
        try view(head, requestMethod: requestMethod, maxFields: maxFields, reusing: lines, exact: true)
    }

    /// ``view(_:requestMethod:maxFields:reusing:)`` of the response head at the start of
    /// `bytes`, which may go on past it (the body): the head ends at its empty line, and the
    /// view's ``ResponseHeadView/bytes`` are exactly the head's. Bytes that end before the head
    /// does throw (as an unterminated head); a reader that cannot tell the two apart measures
    /// the head with ``HeadScanner`` first.
    public static func viewPrefix(
        _ bytes: UnsafeRawBufferPointer, requestMethod: String, maxFields: Int = 100, reusing lines: consuming [FieldLine] = []
    ) throws(HTTPParseError) -> ResponseHeadView {
        try view(bytes, requestMethod: requestMethod, maxFields: maxFields, reusing: lines, exact: false)
    }

    private static func view(
        _ head: UnsafeRawBufferPointer, requestMethod: String, maxFields: Int, reusing lines: consuming [FieldLine], exact: Bool
    ) throws(HTTPParseError) -> ResponseHeadView {
        let n = head.count
        var i = 0
        while i + 1 < n, head[i] == ASCII.cr, head[i + 1] == ASCII.lf { i += 2 }

        // status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4).
        guard n - i >= 14, let version = HTTPVersion.parse(head, i..<(i + 8)), head[i + 8] == ASCII.sp else {
            throw .invalid("malformed status line")
        }
        i += 9
        let d0 = head[i], d1 = head[i + 1], d2 = head[i + 2]
        guard ASCII.isDigit(d0), ASCII.isDigit(d1), ASCII.isDigit(d2) else { throw .invalid("malformed status code") }
        let status = Int(d0 &- 0x30) * 100 + Int(d1 &- 0x30) * 10 + Int(d2 &- 0x30)
        guard (100...599).contains(status) else { throw .invalid("status code out of range") }
        i += 3

        var reason = i..<i
        if head[i] == ASCII.sp {
            i += 1
            let reasonStart = i
            // reason-phrase = *( HTAB / SP / VCHAR / obs-text )
            while i < n {
                let b = head[i]
                if b == ASCII.cr { break }
                guard b >= ASCII.sp || b == ASCII.htab, b != 0x7F else {
                    throw .invalid(b == ASCII.lf ? "bare LF in status line" : "control character in reason phrase")
                }
                i += 1
            }
            reason = reasonStart..<i
        }
        // Tolerate a missing SP after the code ("HTTP/1.1 200\r\n"), which is common in practice.
        guard i + 1 < n, head[i] == ASCII.cr, head[i + 1] == ASCII.lf else { throw .invalid("malformed status line") }
        i += 2

        var lines = lines
        lines.removeAll(keepingCapacity: true)
        var known = KnownFields()
        let length = try FieldSectionParser.headSection(head, from: i, maxFields: maxFields, exact: exact,
                                                         lines: &lines, known: &known)
        let head = UnsafeRawBufferPointer(rebasing: head[0..<length])

        let hasTE = known.count(.transferEncoding) > 0
        let hasCL = known.count(.contentLength) > 0
        // RFC 9112 §6.1/§6.3: both present is a smuggling signature; HTTP/1.0 with
        // Transfer-Encoding has faulty framing. Both are treated as protocol errors.
        if hasTE, hasCL { throw .invalid("both Content-Length and Transfer-Encoding") }
        if hasTE, version == .http1_0 { throw .invalid("Transfer-Encoding in HTTP/1.0 response") }

        let rules = MessageRules(buf: head, lines: lines, known: known)
        let framing: BodyFraming
        if hasNoContent(status: status, requestMethod: requestMethod) || (RequestHeadParser.isConnect(requestMethod) && status < 300) {
            // Still validate a Content-Length so garbage cannot pass through unnoticed.
            if hasCL { _ = try rules.responseContentLength() }
            framing = .none
        } else if hasTE {
            framing = try rules.responseTransferEncoding()
        } else if hasCL {
            framing = .contentLength(try rules.responseContentLength())
        } else {
            framing = .untilClose
        }

        let keepAlive = framing != .untilClose && rules.keepAlive(version)
        return ResponseHeadView(bytes: head, version: version, status: status, framing: framing, keepAlive: keepAlive,
                                reasonRange: reason, lines: lines, known: known)
    }
}
