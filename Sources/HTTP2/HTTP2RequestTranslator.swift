import HTTP1

/// An HTTP/2 request head as the HTTP/1.1 request the proxy's session reads (RFC 9113 §8.3.1
/// back to RFC 9112). nghttp2 has already refused what RFC 9113 calls malformed (uppercase or
/// invalid names, CR, LF or NUL in values, connection-specific fields, `te` other than
/// `trailers`, pseudo-header fields missing, repeated or misplaced), so nothing here can smuggle
/// a second message: names are lowercase tokens, values single lines. The HTTP/1.1 parser then
/// reads the result with its own strict rules, as it reads every request.
///
/// - The target is origin-form with `Host` from `:authority` (a `host` field is dropped when
///   `:authority` is there; RFC 9113 §8.3.1 makes `:authority` win); `cookie` fields, which
///   HTTP/2 may split, are joined with `; ` (§8.2.3).
/// - The body: with `content-length`, as it is; without, and not ended with the head, chunked
///   (so trailers can follow it); a request ended with its head has none (`content-length: 0`
///   for methods that usually carry one, so an HTTP/1.1 upstream does not wait for a body).
/// - `Connection: close`: each stream is one exchange; its session ends after the response.
/// - `CONNECT` (RFC 9113 §8.5) becomes an HTTP/1.1 `CONNECT` to `:authority`, its DATA the
///   tunnel's bytes.
public enum HTTP2RequestTranslator {
    /// How the translated request's body is framed.
    public enum BodyFraming: Equatable, Sendable {
        /// No body.
        case none
        /// The app's bytes as they are (a `content-length`, or a `CONNECT` tunnel).
        case raw
        /// Chunked: each DATA frame a chunk, the end a last chunk with the trailers.
        case chunked
    }

    /// The translated head (bytes of HTTP/1.1 text) and how the body follows it; `nil` when the
    /// request cannot be expressed (no `:authority` or `host`).
    public static func translate(_ head: HTTP2Head, endStream: Bool) -> (head: [UInt8], framing: BodyFraming)? {
        // An extended CONNECT (RFC 8441: WebSocket over HTTP/2) is not offered (no
        // SETTINGS_ENABLE_CONNECT_PROTOCOL), so a peer sending one broke the protocol.
        guard let method = head.method, head.extendedProtocol == nil else { return nil }
        let authority = head.authority ?? head.fields.first("host")
        guard let authority, !authority.isEmpty else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(256)
        if method == "CONNECT" {
            text.append("CONNECT ")
            text.appendUTF8(authority)
            text.append(" HTTP/1.1\r\nHost: ")
            text.appendUTF8(authority)
            text.append("\r\n\r\n")
            return (text, .raw)
        }
        // Only http and https (nghttp2 checks :path's shape only for them), and an origin-form
        // path (or `*` for OPTIONS): anything else, read as HTTP/1.1, could name another origin.
        guard let path = head.path, head.scheme == "http" || head.scheme == "https",
              path.hasPrefix("/") || (path == "*" && method == "OPTIONS") else { return nil }
        text.appendUTF8(method)
        text.append(0x20)
        text.appendUTF8(path)
        text.append(" HTTP/1.1\r\nHost: ")
        text.appendUTF8(authority)
        text.append("\r\n")
        var cookies: [String] = []
        var hasLength = false
        for field in head.fields {
            // (Names are lowercase: nghttp2 refuses others.)
            if field.nameEquals("host") || field.nameEquals("te") { continue }
            if field.nameEquals("cookie") {
                if !field.value.isEmpty { cookies.append(field.value) }
                continue
            }
            if field.nameEquals("content-length") { hasLength = true }
            text.appendField(field.name, field.value)
        }
        if !cookies.isEmpty { text.appendField("cookie", cookies.joined(separator: "; ")) }
        let framing: BodyFraming
        if hasLength {
            framing = .raw
        } else if endStream {
            framing = .none
            if method == "POST" || method == "PUT" || method == "PATCH" { text.append("content-length: 0\r\n") }
        } else {
            framing = .chunked
            text.append("transfer-encoding: chunked\r\n")
        }
        text.append("connection: close\r\n\r\n")
        return (text, framing)
    }

    /// A chunk's size line for `count` bytes of data.
    public static func chunkHeader(_ count: Int) -> String { String(count, radix: 16) + "\r\n" }

    /// The last chunk and the trailer section.
    public static func lastChunk(trailers: HTTPFields) -> String {
        var text = "0\r\n"
        for field in trailers { text += "\(field.name): \(field.value)\r\n" }
        return text + "\r\n"
    }
}
