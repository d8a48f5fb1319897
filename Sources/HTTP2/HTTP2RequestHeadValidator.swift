import HTTP1

/// Checks an HTTP/2 request head and builds the proxy's ``HTTP1/RequestHead`` from it in one
/// pass, with no HTTP/1.1 text written and parsed again (RFC 9113 §8.3.1).
///
/// nghttp2 has already refused what RFC 9113 calls malformed: uppercase or invalid names; CR,
/// LF, NUL or whitespace around a value; connection-specific fields, `te` other than
/// `trailers`; pseudo-header fields missing, repeated, unknown or after regular ones; values
/// RFC 9110 §5.5 does not allow (any control but HTAB, DEL); a `:path` and `:authority` of
/// characters they may not hold. What it does not check is checked here:
///
/// - **Expressible** (else ``Outcome/malformed``: the stream is reset `PROTOCOL_ERROR`): a
///   `:method`, no extended CONNECT (`:protocol`: not offered), not `CONNECT` (the server
///   session answers that itself), an authority (`:authority`, else `host`), `:scheme` `http`
///   or `https`, and a `:path` in origin-form, or `*` for `OPTIONS`.
/// - **The HTTP/1.1 rules every request meets** (else ``Outcome/refused(_:)``: answered `400`
///   or `431`, as a malformed HTTP/1.1 head is): the method a token; the target visible ASCII
///   without a fragment; the authority a valid `Host` (parsed as the HTTP/1.1 parser parses
///   `Host`); one valid `content-length`; values of valid UTF-8; at most `maxFields` lines and
///   a head no larger than `headLimit` bytes (as long as its HTTP/1.1 text would be).
///
/// The head it builds: `Host` from the authority (a `host` field is dropped: `:authority` wins,
/// §8.3.1), the fields in order without `host` and `te`, the `cookie` crumbs joined with `; `
/// (§8.2.3), and the body's framing as a line the HTTP/1.1 exchange reads (`transfer-encoding:
/// chunked` for a body of unknown length, `content-length: 0` for a `POST`, `PUT` or `PATCH`
/// ended with its head, so an HTTP/1.1 upstream does not wait for a body); never kept alive
/// (one exchange per stream).
public enum HTTP2RequestHeadValidator {
    /// How the request's body follows its head.
    public enum Body: Equatable, Sendable {
        /// None: the stream ended with its head.
        case none
        /// As long as its `content-length` says.
        case sized
        /// Of unknown length: the DATA frames until the stream ends, maybe with trailers.
        case streamed
    }

    /// What the check found.
    public enum Outcome {
        /// A head the proxy serves, and how its body follows.
        case head(RequestHead, body: Body)
        /// A head an HTTP/1.1 request with the same parts would be refused for (a 400 or 431).
        case refused(HTTPParseError)
        /// Not a request HTTP/1.1 can express (the stream is reset `PROTOCOL_ERROR`).
        case malformed
    }

    /// Checks `head` (`endStream`: the stream ended with it) and builds its request head, in
    /// `storage` (a head done with) when there is one. `lastHost`: the connection's last `Host`,
    /// taken as it is when this one's bytes are the same.
    public static func validate(_ head: HTTP2Head, endStream: Bool, headLimit: Int = 64 * 1024, maxFields: Int = 100,
                                reusing storage: consuming RequestHeadStorage = RequestHeadStorage(),
                                lastHost: inout ParsedHost?) -> Outcome {
        guard let method = head.method, head.extendedProtocol == nil, !RequestHeadParser.isConnect(method) else { return .malformed }
        guard let authority = head.authority ?? head.firstField("host"), !authority.isEmpty else { return .malformed }
        // Only http and https (nghttp2 checks :path's shape only for them), and an origin-form
        // path (or `*` for OPTIONS): anything else could name another origin.
        guard let path = head.path, let scheme = head.scheme, scheme == "http" || scheme == "https",
              path.utf8.first == UInt8(ascii: "/") || (path == "*" && method == "OPTIONS") else { return .malformed }
        // Sizes first, then the section written in place, one allocation at most.
        var linesSize = 0, lineCount = 1
        var cookiesSize = 0, cookies = 0
        var hasLength = false
        head.forEachField { name, value in
            switch kind(of: name) {
            case .dropped: break
            case .cookie:
                if !value.isEmpty {
                    cookiesSize += value.count
                    cookies += 1
                }
            case .contentLength:
                hasLength = true
                linesSize += name.count + value.count + 4
                lineCount += 1
            case .other:
                linesSize += name.count + value.count + 4
                lineCount += 1
            }
        }
        let body: Body
        let framingLine: StaticString
        if hasLength {
            body = .sized
            framingLine = ""
        } else if endStream {
            body = .none
            framingLine = usuallyCarriesBody(method) ? "content-length: 0\r\n" : ""
        } else {
            body = .streamed
            framingLine = "transfer-encoding: chunked\r\n"
        }
        if cookies > 0 { lineCount += 1 }
        if framingLine.utf8CodeUnitCount > 0 { lineCount += 1 }
        let cookieSize = cookies == 0 ? 0 : 10 + cookiesSize + 2 * (cookies - 1)
        let sectionSize = authority.utf8.count + 8 + linesSize + cookieSize + framingLine.utf8CodeUnitCount + 2
        // As long as its HTTP/1.1 text would be ("METHOD target HTTP/1.1\r\n" and the section).
        guard method.utf8.count + path.utf8.count + 12 + sectionSize <= headLimit else { return .refused(.headTooLarge) }
        guard lineCount <= maxFields else { return .refused(.tooManyFields) }
        var bytes = storage.takeFieldBytes()
        var lines = storage.takeFieldLines()
        lines.reserveCapacity(lineCount)
        PresizedSectionWriter.resize(&bytes, to: sectionSize)
        // The fields read from their storage and the authority from its bytes, lent for the
        // writing: a closure that captured the head and the String copied them (18 reference
        // counts a request, the closure too large to inline once the writer was shared).
        head.withFieldStorage { fieldBytes, fieldEnds in
            authority.withUTF8InPlace { hostBytes in
                bytes.withUnsafeMutableBytes { buffer in
                    var out = PresizedSectionWriter(buffer)
                    out.line(name: "Host", value: UnsafeRawBufferPointer(hostBytes), into: &lines)
                    HTTP2Head.forEachField(bytes: fieldBytes, ends: fieldEnds) { name, value in
                        switch kind(of: name) {
                        case .dropped, .cookie: return
                        case .contentLength, .other: out.line(name: name, value: value, into: &lines)
                        }
                    }
                    if cookies > 0 {
                        let nameStart = out.position
                        out.put("cookie")
                        let nameEnd = out.position
                        out.put(": ")
                        let valueStart = out.position
                        var first = true
                        HTTP2Head.forEachField(bytes: fieldBytes, ends: fieldEnds) { name, value in
                            guard kind(of: name) == .cookie, !value.isEmpty else { return }
                            if !first { out.put("; ") }
                            first = false
                            out.put(value)
                        }
                        lines.append(out.trimmedLine(name: nameStart..<nameEnd, value: valueStart..<out.position))
                        out.put("\r\n")
                    }
                    if framingLine.utf8CodeUnitCount > 0 {
                        let nameStart = out.position
                        out.put(framingLine)
                        // "name: value\r\n": the name ends at the colon, the value before the CRLF.
                        let colon = nameStart + (body == .streamed ? 17 : 14)
                        lines.append(FieldLine(name: nameStart..<colon, value: colon + 2..<out.position - 2))
                    }
                    out.put("\r\n")
                    // (Sized and written by the same rules: a difference is a bug, not input.)
                    precondition(out.position == buffer.count, "an HTTP/2 request head came out shorter than its size")
                }
            }
        }
        do {
            let request = try RequestHeadParser.head(method: method, target: path, fieldBytes: bytes, lines: lines,
                                                     maxFields: maxFields, reusing: storage, lastHost: &lastHost)
            return .head(request, body: body)
        } catch {
            return .refused(error)
        }
    }

    /// Whether `method` usually carries a body (`POST`, `PUT`, `PATCH`): an HTTP/1.1 upstream
    /// waits for a body such a request announces none of. (Lengths first: most requests are a
    /// `GET`, and a String comparison that fails is an out-of-line call.)
    static func usuallyCarriesBody(_ method: String) -> Bool {
        // (And the first letter: `GET` is as long as `PUT`.)
        switch (method.utf8.count, method.utf8.first) {
        case (3, UInt8(ascii: "P")): method == "PUT"
        case (4, UInt8(ascii: "P")): method == "POST"
        case (5, UInt8(ascii: "P")): method == "PATCH"
        default: false
        }
    }

    /// What a received field is to the head.
    private enum FieldKind: Equatable {
        /// `host` (the `Host` line is the authority) and `te` (HTTP/2's only `trailers`).
        case dropped
        /// `cookie`: its crumbs are joined into one line.
        case cookie
        /// `content-length`: the body is framed by it.
        case contentLength
        /// Any other field: kept as it is.
        case other
    }

    /// `name`'s kind (received names are lowercase: nghttp2 refuses others).
    private static func kind(of name: UnsafeRawBufferPointer) -> FieldKind {
        switch name.count {
        case 2: return HTTP2Codec.equalsIgnoringCase(name, "te") ? .dropped : .other
        case 4: return HTTP2Codec.equalsIgnoringCase(name, "host") ? .dropped : .other
        case 6: return HTTP2Codec.equalsIgnoringCase(name, "cookie") ? .cookie : .other
        case 14: return HTTP2Codec.equalsIgnoringCase(name, "content-length") ? .contentLength : .other
        default: return .other
        }
    }
}
