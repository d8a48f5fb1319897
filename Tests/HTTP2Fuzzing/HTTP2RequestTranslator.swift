import HTTP1
import HTTP2

/// The test oracle for ``HTTP2/HTTP2RequestHeadValidator``: the translation the proxy used
/// before it, kept so the differential fuzzer (``HTTP2RequestCheck``) can hold the two to the
/// same answers.
///
/// An HTTP/2 request head as the HTTP/1.1 request the proxy's session serves (RFC 9113 §8.3.1
/// back to RFC 9112): a method, an origin-form target and a field section, which
/// ``HTTP1/RequestHeadParser/head(method:target:fieldSection:maxFields:reusing:lastHost:)`` checks with the rules
/// of the strict HTTP/1.1 parser, as it checks every request — the guard against a translated
/// head carrying what an HTTP/1.1 upstream would read as a second message. nghttp2 has already
/// refused what RFC 9113 calls malformed (uppercase or invalid names; CR, LF, NUL or whitespace
/// around a value; connection-specific fields, `te` other than `trailers`, pseudo-header
/// fields missing, repeated or misplaced), and values RFC 9110 §5.5 does not allow (any other
/// control character than HTAB, DEL).
///
/// - The target is origin-form (or `*` for `OPTIONS`) with `Host` from `:authority` (a `host`
///   field is dropped when `:authority` is there; RFC 9113 §8.3.1 makes `:authority` win);
///   `cookie` fields, which HTTP/2 may split, are joined with `; ` (§8.2.3).
/// - The body: with `content-length`, as it is; without, and not ended with the head, chunked
///   (so trailers can follow it); a request ended with its head has none (`content-length: 0`
///   for methods that usually carry one, so an HTTP/1.1 upstream does not wait for a body).
/// - Each stream is one exchange: the head is not kept alive (its session ends after the
///   response).
/// - `CONNECT` (RFC 9113 §8.5) is not translated: the server session answers it itself.
public enum HTTP2RequestTranslator {
    /// How the translated request's body is framed.
    public enum BodyFraming: Equatable, Sendable {
        /// No body.
        case none
        /// The app's bytes as they are (a `content-length`).
        case raw
        /// Chunked: each DATA frame a chunk, the end a last chunk with the trailers.
        case chunked
    }

    /// A translated request head, in the parts the HTTP/1.1 rules check.
    public struct Translation: Sendable {
        /// The method, as the app sent it.
        public let method: String
        /// The origin-form target (`:path`).
        public let target: String
        /// `Host` and the fields, as `name: value` lines, and the empty line.
        public let fieldSection: [UInt8]
        /// How the body follows the head.
        public let framing: BodyFraming

        /// The head as the HTTP/1.1 session reads it: checked by the strict parser's rules
        /// (throws what a parser would refuse, with its error).
        public func requestHead(maxFields: Int = 100,
                                reusing storage: consuming RequestHeadStorage = RequestHeadStorage()) throws(HTTPParseError) -> RequestHead {
            var lastHost: ParsedHost?
            return try requestHead(maxFields: maxFields, reusing: storage, lastHost: &lastHost)
        }

        /// ``requestHead(maxFields:reusing:)`` with the connection's last `Host` (taken when
        /// this one's bytes are the same, replaced by this one's when they differ).
        public func requestHead(maxFields: Int = 100, reusing storage: consuming RequestHeadStorage = RequestHeadStorage(),
                                lastHost: inout ParsedHost?) throws(HTTPParseError) -> RequestHead {
            try RequestHeadParser.head(method: method, target: target, fieldSection: fieldSection, maxFields: maxFields,
                                       reusing: storage, lastHost: &lastHost)
        }

        /// The head as HTTP/1.1 text (request line and field section).
        public var text: [UInt8] {
            var text: [UInt8] = []
            text.appendUTF8(method)
            text.append(0x20)
            text.appendUTF8(target)
            text.append(" HTTP/1.1\r\n")
            return text + fieldSection
        }
    }

    /// The translated head, or `nil` when the request cannot be expressed (no `:authority` or
    /// `host`, a scheme other than http or https, a target not origin-form, `CONNECT`). The
    /// field section is written into `storage` when it has room (a head done with gives its
    /// bytes: ``HTTP1/RequestHeadStorage/takeFieldBytes()``), else into a new array.
    public static func translate(_ head: HTTP2Head, endStream: Bool, into storage: consuming [UInt8] = []) -> Translation? {
        // An extended CONNECT (RFC 8441: WebSocket over HTTP/2) is not offered (no
        // SETTINGS_ENABLE_CONNECT_PROTOCOL), so a peer sending one broke the protocol.
        guard let method = head.method, head.extendedProtocol == nil, !RequestHeadParser.isConnect(method) else { return nil }
        let authority = head.authority ?? head.firstField("host")
        guard let authority, !authority.isEmpty else { return nil }
        // Only http and https (nghttp2 checks :path's shape only for them), and an origin-form
        // path (or `*` for OPTIONS): anything else, read as HTTP/1.1, could name another origin.
        // (The scheme bound first: comparing the optional copied it through generic witnesses.)
        guard let path = head.path, let scheme = head.scheme, scheme == "http" || scheme == "https",
              path.utf8.first == UInt8(ascii: "/") || (path == "*" && method == "OPTIONS") else { return nil }
        // The field lines go on as the codec received them (no String per field): their sizes
        // first, then the section written in place, one allocation (an append per piece cost
        // about 45 instructions, four a field).
        var linesSize = 0
        var cookiesSize = 0
        var cookies = 0
        var hasLength = false
        head.forEachField { name, value in
            switch Self.kind(of: name) {
            case .dropped: break
            case .cookie:
                if !value.isEmpty {
                    cookiesSize += value.count
                    cookies += 1
                }
            case .contentLength:
                hasLength = true
                linesSize += name.count + value.count + 4
            case .other:
                linesSize += name.count + value.count + 4
            }
        }
        let framing: BodyFraming
        let framingLine: StaticString
        if hasLength {
            framing = .raw
            framingLine = ""
        } else if endStream {
            framing = .none
            framingLine = Self.usuallyCarriesBody(method) ? "content-length: 0\r\n" : ""
        } else {
            framing = .chunked
            framingLine = "transfer-encoding: chunked\r\n"
        }
        // RFC 9113 §8.2.3: the cookie crumbs go on as one field, joined with "; ".
        let cookieSize = cookies == 0 ? 0 : 10 + cookiesSize + 2 * (cookies - 1)
        var host = authority
        let section = host.withUTF8 { host in
            let size = 8 + host.count + linesSize + cookieSize + framingLine.utf8CodeUnitCount + 2
            return written(size: size, into: &storage) { buffer in
                var out = Writer(base: buffer.baseAddress!, capacity: buffer.count)
                out.put("Host: ")
                out.put(UnsafeRawBufferPointer(host))
                out.put("\r\n")
                head.forEachField { name, value in
                    switch Self.kind(of: name) {
                    case .dropped, .cookie: return
                    case .contentLength, .other:
                        out.put(name)
                        out.put(": ")
                        out.put(value)
                        out.put("\r\n")
                    }
                }
                if cookies > 0 {
                    out.put("cookie: ")
                    var first = true
                    head.forEachField { name, value in
                        guard Self.kind(of: name) == .cookie, !value.isEmpty else { return }
                        if !first { out.put("; ") }
                        first = false
                        out.put(value)
                    }
                    out.put("\r\n")
                }
                out.put(framingLine)
                out.put("\r\n")
                // (Sized and written by the same rules: a difference is a bug, not input.)
                precondition(out.position == buffer.count, "a translated head came out shorter than its size")
            }
        }
        return Translation(method: method, target: path, fieldSection: section, framing: framing)
    }

    /// `size` bytes `write` fills (all of them): in `storage` when it has the room, its count
    /// set to `size` (growing it by the difference from what it held, usually a few bytes: a
    /// connection's requests look alike), else in a new array.
    private static func written(size: Int, into storage: inout [UInt8],
                                _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void) -> [UInt8] {
        guard storage.capacity >= size else {
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                write(buffer)
                count = size
            }
        }
        if storage.count > size {
            storage.removeLast(storage.count - size)
        } else if storage.count < size {
            storage.append(contentsOf: repeatElement(0, count: size - storage.count))
        }
        storage.withUnsafeMutableBufferPointer { write($0) }
        var section: [UInt8] = []
        swap(&section, &storage)
        return section
    }

    /// Whether `method` is one that usually carries a body (`POST`, `PUT`, `PATCH`): an
    /// HTTP/1.1 upstream waits for a body such a request announces none of. (Lengths first:
    /// most requests are a `GET`, and a String comparison that fails is an out-of-line call.)
    static func usuallyCarriesBody(_ method: String) -> Bool {
        switch method.utf8.count {
        case 3: method == "PUT"
        case 4: method == "POST"
        case 5: method == "PATCH"
        default: false
        }
    }

    /// What a received field is to the translation.
    private enum FieldKind: Equatable {
        /// `host` (the `Host` line is `:authority`) and `te` (HTTP/2's only `trailers`).
        case dropped
        /// `cookie`: its crumbs are joined into one line.
        case cookie
        /// `content-length`: the body is framed by it.
        case contentLength
        /// Any other field: copied as it is.
        case other
    }

    /// `name`'s kind (received names are lowercase: nghttp2 refuses others).
    private static func kind(of name: UnsafeRawBufferPointer) -> FieldKind {
        if equals(name, "host") || equals(name, "te") { return .dropped }
        if equals(name, "cookie") { return .cookie }
        if equals(name, "content-length") { return .contentLength }
        return .other
    }

    /// Writes bytes one after the other into memory sized for them beforehand (a size that
    /// came out short stops the process rather than write past it).
    private struct Writer {
        /// Where the bytes go.
        let base: UnsafeMutablePointer<UInt8>
        /// How many bytes fit.
        let capacity: Int
        /// How many were written.
        var position = 0

        /// Appends `bytes`.
        mutating func put(_ bytes: UnsafeRawBufferPointer) {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            precondition(bytes.count <= capacity - position, "a translated head outgrew its size")
            (base + position).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            position += bytes.count
        }

        /// Appends the bytes of `literal`.
        mutating func put(_ literal: StaticString) {
            precondition(literal.utf8CodeUnitCount <= capacity - position, "a translated head outgrew its size")
            (base + position).initialize(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
            position += literal.utf8CodeUnitCount
        }
    }

    /// Whether `name` is exactly `lowercase` (received names are lowercase).
    private static func equals(_ name: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        name.elementsEqual(UnsafeRawBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount))
    }
}
