/// Parses a request head (RFC 9112 §3 and §5) and derives framing and persistence.
public enum RequestHeadParser {
    /// Parses a request head.
    ///
    /// - Parameters:
    ///   - head: exactly the bytes ``HeadScanner`` measured: optional leading empty lines, the
    ///     request line, field lines, and the final empty line (CRLFCRLF).
    ///   - maxFields: more field lines than this throw ``HTTPParseError/tooManyFields``.
    /// - Throws: ``HTTPParseError/tooManyFields``, or ``HTTPParseError/invalid(_:)`` for any
    ///   syntax, target, Host or framing violation (including bytes after the empty line).
    ///   - storage: arrays to parse into (their storage is reused when large enough).
    public static func parse(_ head: UnsafeRawBufferPointer, maxFields: Int = 100,
                             reusing storage: consuming RequestHeadStorage = RequestHeadStorage()) throws(HTTPParseError) -> RequestHead {
        var lastHost: ParsedHost?
        return try parse(head, maxFields: maxFields, reusing: storage, exact: true, lastHost: &lastHost).head
    }

    /// Parses the request head at the start of `bytes`, which may go on past it (a body, the
    /// next request), with exactly the rules of ``parse(_:maxFields:reusing:)``: the head ends at
    /// its empty line. Bytes that end before the head does throw (as an unterminated head);
    /// a reader that cannot tell the two apart measures the head with ``HeadScanner`` first.
    ///
    /// - Returns: the head and its length in `bytes`.
    public static func parsePrefix(
        _ bytes: UnsafeRawBufferPointer, maxFields: Int = 100, reusing storage: consuming RequestHeadStorage = RequestHeadStorage()
    ) throws(HTTPParseError) -> (head: RequestHead, length: Int) {
        var lastHost: ParsedHost?
        return try parse(bytes, maxFields: maxFields, reusing: storage, exact: false, lastHost: &lastHost)
    }

    /// ``parsePrefix(_:maxFields:reusing:)`` for the next head of a connection: `lastHost` is
    /// the authority of its last head (an absolute-form target's, or else its `Host`), taken as
    /// it is when this head names it with the same bytes (they passed these checks then: an
    /// app's connection through a forward proxy names one origin, request after request), and
    /// replaced by this one's when they differ.
    public static func parsePrefix(
        _ bytes: UnsafeRawBufferPointer, maxFields: Int = 100, reusing storage: consuming RequestHeadStorage = RequestHeadStorage(),
        lastHost: inout ParsedHost?
    ) throws(HTTPParseError) -> (head: RequestHead, length: Int) {
        try parse(bytes, maxFields: maxFields, reusing: storage, exact: false, lastHost: &lastHost)
    }

    private static func parse(
        _ head: UnsafeRawBufferPointer, maxFields: Int, reusing storage: consuming RequestHeadStorage, exact: Bool,
        lastHost: inout ParsedHost?
    ) throws(HTTPParseError) -> (head: RequestHead, length: Int) {
        let n = head.count
        var i = 0
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while i + 1 < n, head[i] == ASCII.cr, head[i + 1] == ASCII.lf { i += 2 }

        // request-line = method SP request-target SP HTTP-version (RFC 9112 §3); exactly one SP
        // between parts, no other whitespace.
        let methodStart = i
        while i < n, ASCII.isTchar(head[i]) { i += 1 }
        guard i < n, i > methodStart, head[i] == ASCII.sp else { throw .invalid("malformed request line") }
        let methodRange = methodStart..<i
        i += 1

        let targetStart = i
        // The target's bytes, 8 at a time; the run ends at the SP before the version, or at a
        // byte no target has.
        i = ASCII.targetRunEnd(head, from: i, to: n)
        if i < n, head[i] != ASCII.sp {
            let b = head[i]
            // Visible ASCII only: no CTLs, DEL, spaces or raw non-ASCII (RFC 3986 §2).
            guard b > ASCII.sp, b < 0x7F else {
                if b == ASCII.cr || b == ASCII.lf { throw .invalid("malformed request line") }
                throw .invalid("invalid character in request target")
            }
            // A fragment is never sent (RFC 9110 §4.2.5); reject it instead of guessing.
            throw .invalid("fragment in request target")
        }
        guard i < n, i > targetStart else { throw .invalid("malformed request line") }
        let targetRange = targetStart..<i
        i += 1

        let versionStart = i
        while i < n, head[i] != ASCII.cr, head[i] != ASCII.lf { i += 1 }
        guard let version = HTTPVersion.parse(head, versionStart..<i) else {
            throw .invalid("unsupported HTTP version")
        }
        guard i + 1 < n, head[i] == ASCII.cr, head[i + 1] == ASCII.lf else {
            throw .invalid("malformed request line")
        }
        i += 2

        var lines: [FieldLine] = []
        var bytes: [UInt8] = []
        let recycled = storage.head
        storage.head = nil
        if let recycled {
            // Moved out: unique, so filled in place.
            swap(&lines, &recycled.fieldLines)
            swap(&bytes, &recycled.fieldBytes)
        }
        lines.removeAll(keepingCapacity: true)
        var known = KnownFields()
        let length = try FieldSectionParser.headSection(head, from: i, maxFields: maxFields, exact: exact,
                                                         lines: &lines, known: &known)

        let method = Self.method(head, methodRange)
        // Methods are case-sensitive (RFC 9110 §9.1): "connect" is not CONNECT.
        var targetAuthority = 0..<0
        let target = try parseTarget(head, targetRange, method: method, isConnect: ASCII.equals(head, methodRange, "CONNECT"),
                                     authority: &targetAuthority, lastHost: &lastHost)

        // Host (RFC 9112 §3.2): required in HTTP/1.1, at most one line, must be valid.
        var host: Authority?
        switch known.count(.host) {
        case 0:
            if version == .http1_1 { throw .invalid("missing Host") }
        case 1:
            let value = known[.host].firstValue
            if case .absolute(_, let authority, _) = target {
                // The usual absolute-form request repeats its authority as Host: parsed once.
                // (What the connection remembers is the target's authority, not this.)
                if sameBytes(head, value, targetAuthority) {
                    host = authority
                } else {
                    guard let parsed = Authority.parse(head, value) else { throw .invalid("invalid Host") }
                    host = parsed
                }
            } else {
                guard let parsed = ParsedHost.authority(head, value, remembering: &lastHost) else { throw .invalid("invalid Host") }
                host = parsed
            }
        default:
            throw .invalid("multiple Host fields")
        }
        if case .absolute(let scheme, let authority, _) = target, let host {
            // RFC 9112 §3.2.2 says to ignore Host in favour of the target; we reject a
            // disagreement instead, since the next hop may pick the other one.
            let defaultPort = RequestTarget.defaultPort(scheme: scheme)
            guard authority.host == host.host,
                  authority.port(default: defaultPort) == host.port(default: defaultPort)
            else { throw .invalid("Host does not match request target") }
        }

        let rules = MessageRules(buf: head, lines: lines, known: known)
        let framing = try requestFraming(rules, version: version)

        if let recycled {
            recycled.refill(
                method: method, target: target, version: version,
                fieldBytes: copy(UnsafeRawBufferPointer(rebasing: head[0..<length]), into: consume bytes),
                fieldLines: lines, connectionLines: known.count(.connection), framing: framing, host: host,
                keepAlive: rules.keepAlive(version), expectsContinue: rules.expectsContinue())
            return (recycled, length)
        }
        let parsed = RequestHead(
            method: method,
            target: target,
            version: version,
            fieldBytes: copy(UnsafeRawBufferPointer(rebasing: head[0..<length]), into: consume bytes),
            fieldLines: lines,
            connectionLines: known.count(.connection),
            framing: framing,
            host: host,
            keepAlive: rules.keepAlive(version),
            expectsContinue: rules.expectsContinue()
        )
        return (parsed, length)
    }

    /// Framing, RFC 9112 §6.3 items 3, 6 and 7 (requests never read until close).
    @inline(__always)
    private static func requestFraming(_ rules: MessageRules, version: HTTPVersion) throws(HTTPParseError) -> BodyFraming {
        let hasTE = rules.known.count(.transferEncoding) > 0
        let hasCL = rules.known.count(.contentLength) > 0
        if hasTE {
            if hasCL { throw .invalid("both Content-Length and Transfer-Encoding") }
            // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
            if version == .http1_0 { throw .invalid("Transfer-Encoding in HTTP/1.0 request") }
            try rules.validateRequestTransferEncoding()
            return .chunked
        }
        if hasCL { return .contentLength(try rules.requestContentLength()) }
        return .none
    }

    /// A head whose request line comes in parts — an HTTP/2 request's `:method` and `:path`,
    /// its `:authority` already the first line of `fieldSection` as `Host` — checked by the
    /// rules a parsed head is: the method a token, the target origin-form (or `*` for
    /// `OPTIONS`) of visible ASCII without a fragment, `fieldSection` (`name: value` lines and
    /// the empty line, what ``parse(_:maxFields:reusing:)`` reads after a request line) by the
    /// same field-section parser, one valid `Host`, the same framing rules. HTTP/1.1; the
    /// connection is not kept alive (one exchange per stream). `fieldSection` becomes the
    /// head's bytes without a copy; `storage`, a head done with, gives its object and its
    /// lines' array. `lastHost`: the `Host` of the connection's last head, taken as it is when
    /// this one's has the same bytes (they passed these checks then), and replaced by this
    /// one's when they differ.
    public static func head(method: String, target: String, fieldSection: consuming [UInt8],
                            maxFields: Int = 100,
                            reusing storage: consuming RequestHeadStorage = RequestHeadStorage(),
                            lastHost: inout ParsedHost?) throws(HTTPParseError) -> RequestHead {
        var lines: [FieldLine] = []
        let recycled = storage.head
        storage.head = nil
        // Moved out: unique, so filled in place (the section comes with its own bytes).
        if let recycled { swap(&lines, &recycled.fieldLines) }
        lines.removeAll(keepingCapacity: true)
        var known = KnownFields()
        let scanned = fieldSection.withUnsafeBytes { section in
            Result { () throws(HTTPParseError) in
                _ = try FieldSectionParser.headSection(section, from: 0, maxFields: maxFields, exact: true,
                                                       lines: &lines, known: &known)
            }
        }
        try scanned.get()
        return try streamHead(method: method, target: target, fieldBytes: fieldSection, lines: lines, known: known,
                              into: recycled, lastHost: &lastHost)
    }

    /// A head whose request line comes in parts and whose field lines a codec already wrote
    /// and checked (an HTTP/2 request's, by nghttp2 and ``HTTP2RequestHeadValidator``): the
    /// same rules as ``head(method:target:fieldSection:maxFields:reusing:lastHost:)`` without
    /// scanning the section again. `fieldBytes` holds the lines (`name: value` and CRLF each,
    /// then the empty line), `lines` their offsets; the values' offsets without whitespace
    /// around them. Each line is held to the field-section parser's rules (names tokens, values
    /// without controls but HTAB and of valid UTF-8, at most `maxFields` lines) in a look at its
    /// bytes 8 at a time, not a parse.
    public static func head(method: String, target: String, fieldBytes: consuming [UInt8], lines: consuming [FieldLine],
                            maxFields: Int = 100,
                            reusing storage: consuming RequestHeadStorage = RequestHeadStorage(),
                            lastHost: inout ParsedHost?) throws(HTTPParseError) -> RequestHead {
        guard lines.count <= maxFields else { throw .tooManyFields }
        var known = KnownFields()
        let problem = fieldBytes.withUnsafeBytes { bytes -> HTTPParseError? in
            for (index, line) in lines.enumerated() {
                guard ASCII.isToken(bytes, line.name) else { return .invalid("invalid character in field name") }
                if !ASCII.isPlainText(bytes, line.value), let problem = oddValue(bytes, line.value) { return problem }
                if let kind = KnownFields.classifyApart(bytes, line.name) { known.record(kind, index: index, value: line.value) }
            }
            return nil
        }
        if let problem { throw problem }
        let recycled = storage.head
        storage.head = nil
        return try streamHead(method: method, target: target, fieldBytes: fieldBytes, lines: lines, known: known,
                              into: recycled, lastHost: &lastHost)
    }

    /// What is wrong with a value that is not plain text, if anything: a control character
    /// other than HTAB, DEL, or bytes above 0x7F that are not UTF-8 (RFC 9110 §5.5, as the
    /// field-section parser holds them).
    private static func oddValue(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> HTTPParseError? {
        var high = false
        for index in range {
            let b = buf[index]
            if b >= 0x80 {
                high = true
            } else if (b < ASCII.sp && b != ASCII.htab) || b == 0x7F {
                return .invalid("control character in field value")
            }
        }
        if high, String(validating: UnsafeRawBufferPointer(rebasing: buf[range]), as: UTF8.self) == nil {
            return .invalid("field value is not valid UTF-8")
        }
        return nil
    }

    /// The rules after the field section, for a head given in parts: the method a token, the
    /// target origin-form (or `*` for `OPTIONS`), one valid `Host`, the framing; filled into
    /// `recycled` when there is one.
    private static func streamHead(method: String, target: String, fieldBytes: consuming [UInt8], lines: [FieldLine],
                                   known: KnownFields, into recycled: RequestHead?,
                                   lastHost: inout ParsedHost?) throws(HTTPParseError) -> RequestHead {
        // (Read in place: a `var` copy of each for `withUTF8` was a retain and a release.)
        let methodValid = method.withUTF8InPlace { bytes in !bytes.isEmpty && bytes.allSatisfy { ASCII.isTchar($0) } }
        guard methodValid else { throw .invalid("malformed request line") }
        // (Results out of the closures: `withUTF8InPlace` and `withUnsafeBytes` rethrow untyped.)
        let requestTarget = target.withUTF8InPlace { bytes in
            Result { () throws(HTTPParseError) in try Self.streamTarget(UnsafeRawBufferPointer(bytes), method: method, target) }
        }
        let parts = fieldBytes.withUnsafeBytes { section in
            Result { () throws(HTTPParseError) -> (BodyFraming, Authority, Bool) in
                guard known.count(.host) == 1 else {
                    throw .invalid(known.count(.host) == 0 ? "missing Host" : "multiple Host fields")
                }
                let value = known[.host].firstValue
                guard let host = ParsedHost.authority(section, value, remembering: &lastHost) else { throw .invalid("invalid Host") }
                let rules = MessageRules(buf: section, lines: lines, known: known)
                return (try requestFraming(rules, version: .http1_1), host, rules.expectsContinue())
            }
        }
        let (framing, host, expectsContinue) = try parts.get()
        if let recycled {
            recycled.refill(method: method, target: try requestTarget.get(), version: .http1_1, fieldBytes: fieldBytes,
                            fieldLines: lines, connectionLines: known.count(.connection), framing: framing,
                            host: host, keepAlive: false, expectsContinue: expectsContinue)
            return recycled
        }
        return RequestHead(method: method, target: try requestTarget.get(), version: .http1_1, fieldBytes: fieldBytes,
                           fieldLines: lines, connectionLines: known.count(.connection), framing: framing,
                           host: host, keepAlive: false, expectsContinue: expectsContinue)
    }

    /// `target` (its bytes `buf`) as a request line's target given in parts: origin-form, or
    /// `*` for `OPTIONS`. As in a request line: visible ASCII only (no CTLs, DEL, spaces or raw
    /// non-ASCII, RFC 3986 §2), never a fragment (RFC 9110 §4.2.5).
    private static func streamTarget(_ buf: UnsafeRawBufferPointer, method: String,
                                     _ target: String) throws(HTTPParseError) -> RequestTarget {
        let end = ASCII.targetRunEnd(buf, from: 0, to: buf.count)
        if end < buf.count {
            throw .invalid(buf[end] == 0x23 ? "fragment in request target" : "invalid character in request target")
        }
        guard let first = buf.first else { throw .invalid("malformed request line") }
        if first == 0x2F { return .origin(target) }
        guard buf.count == 1, first == 0x2A else { throw .invalid("invalid request target") }
        guard method == "OPTIONS" else { throw .invalid("asterisk-form only allowed for OPTIONS") }
        return .asterisk
    }

    /// The method token `buf[range]` as a String: the common methods as literals (making a
    /// String from the bytes costs some 60 instructions, more for HTTP/2's `:method`), any
    /// other from its bytes. Case-sensitive (RFC 9110 §9.1): only the exact bytes match.
    public static func method(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        switch range.count {
        case 3:
            if ASCII.equals(buf, range, "GET") { return "GET" }
            if ASCII.equals(buf, range, "PUT") { return "PUT" }
        case 4:
            if ASCII.equals(buf, range, "POST") { return "POST" }
            if ASCII.equals(buf, range, "HEAD") { return "HEAD" }
        case 5:
            if ASCII.equals(buf, range, "PATCH") { return "PATCH" }
        case 6:
            if ASCII.equals(buf, range, "DELETE") { return "DELETE" }
        case 7:
            if ASCII.equals(buf, range, "OPTIONS") { return "OPTIONS" }
            if ASCII.equals(buf, range, "CONNECT") { return "CONNECT" }
        default:
            break
        }
        return ASCII.string(buf, range)
    }

    /// Whether `method` is `CONNECT` (case-sensitive). The length first: a String comparison
    /// that fails is an out-of-line call, and nearly every request is not a `CONNECT`.
    @inlinable
    public static func isConnect(_ method: String) -> Bool {
        method.utf8.count == 7 && method == "CONNECT"
    }

    /// `bytes` holding a copy of `head` (in its own storage when that is unique and large enough).
    private static func copy(_ head: UnsafeRawBufferPointer, into bytes: consuming [UInt8]) -> [UInt8] {
        let n = head.count
        guard bytes.capacity >= n else {
            return [UInt8](unsafeUninitializedCapacity: n) { copy, count in
                UnsafeMutableRawBufferPointer(copy).copyMemory(from: head)
                count = n
            }
        }
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: head)
        return bytes
    }

    /// Whether `buf[a]` and `buf[b]` hold the same bytes.
    private static func sameBytes(_ buf: UnsafeRawBufferPointer, _ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        var offset = 0
        while offset &+ 8 <= a.count {  // 8 bytes at a time
            if ASCII.word(buf, a.lowerBound &+ offset) != ASCII.word(buf, b.lowerBound &+ offset) { return false }
            offset &+= 8
        }
        while offset < a.count {
            if buf[a.lowerBound &+ offset] != buf[b.lowerBound &+ offset] { return false }
            offset &+= 1
        }
        return true
    }

    /// Classifies the request-target into its four forms (RFC 9112 §3.2.1-3.2.4); sets
    /// `authority` to the bytes of an absolute-form target's authority (an inout, not a returned
    /// tuple: a tuple holding the target was copied through generic value witnesses).
    static func parseTarget(
        _ buf: UnsafeRawBufferPointer, _ range: Range<Int>, method: String, isConnect: Bool, authority: inout Range<Int>,
        lastHost: inout ParsedHost?
    ) throws(HTTPParseError) -> RequestTarget {
        let first = buf[range.lowerBound]
        if isConnect {
            // authority-form is the only form allowed for CONNECT, and needs a port (§3.2.3).
            guard first != 0x2F, let authority = Authority.parse(buf, range), authority.port != nil else {
                throw .invalid("CONNECT requires authority-form target with port")
            }
            return .authority(authority)
        }
        if first == 0x2F {  // '/'
            return .origin(ASCII.string(buf, range))
        }
        if range.count == 1, first == 0x2A {  // '*'
            guard method == "OPTIONS" else { throw .invalid("asterisk-form only allowed for OPTIONS") }
            return .asterisk
        }
        if let absolute = try parseAbsolute(buf, range, authority: &authority, lastHost: &lastHost) {
            return absolute
        }
        if Authority.parse(buf, range) != nil {
            throw .invalid("authority-form only allowed for CONNECT")
        }
        throw .invalid("invalid request target")
    }

    /// Parses absolute-form `scheme "://" authority [path-abempty] ["?" query]`, or returns
    /// nil when the target does not start with `scheme://`.
    static func parseAbsolute(
        _ buf: UnsafeRawBufferPointer, _ range: Range<Int>, authority authorityBytes: inout Range<Int>,
        lastHost: inout ParsedHost?
    ) throws(HTTPParseError) -> RequestTarget? {
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1)
        var i = range.lowerBound
        let end = range.upperBound
        guard (buf[i] | 0x20) &- 0x61 < 26 else { return nil }
        while i < end {
            let b = buf[i]
            guard (b | 0x20) &- 0x61 < 26 || ASCII.isDigit(b) || b == 0x2B || b == 0x2D || b == 0x2E else { break }
            i += 1
        }
        let schemeRange = range.lowerBound..<i
        guard end - i >= 3, buf[i] == ASCII.colon, buf[i + 1] == 0x2F, buf[i + 2] == 0x2F else { return nil }
        let scheme: String
        if ASCII.equalsLowercase(buf, schemeRange, "http") {
            scheme = "http"
        } else if ASCII.equalsLowercase(buf, schemeRange, "https") {
            scheme = "https"
        } else {
            throw .invalid("unsupported scheme in request target")
        }
        i += 3
        let authorityStart = i
        var userinfo = false
        while i < end {  // up to '/' or '?'
            let b = buf[i]
            if b == 0x2F || b == 0x3F { break }
            if b == 0x40 { userinfo = true }
            i += 1
        }
        let authorityRange = authorityStart..<i
        if userinfo { throw .invalid("userinfo in request target") }
        guard let authority = ParsedHost.authority(buf, authorityRange, remembering: &lastHost) else {
            throw .invalid("invalid authority in request target")
        }
        let path: String
        if i == end {
            path = "/"
        } else if buf[i] == 0x3F {  // "?query" with empty path
            path = "/" + ASCII.string(buf, i..<end)
        } else {
            path = ASCII.string(buf, i..<end)
        }
        authorityBytes = authorityRange
        return .absolute(scheme: scheme, authority: authority, path: path)
    }
}
