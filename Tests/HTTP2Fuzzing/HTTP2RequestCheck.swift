import HTTP1
import HTTP2

/// The properties the HTTP/2 fuzzer checks, for one input: frames from an app (after the
/// connection preface, which the check adds) go through the server codec in reads of a size
/// the first byte chooses, and every request head that comes out goes through the translation
/// to HTTP/1.1 and back through the strict HTTP/1.1 parser, and through the proxy's
/// ``HTTP2/HTTP2RequestHeadValidator``, which must agree with that translation (its oracle).
///
/// - Every head the codec delivers obeys RFC 9113 §8.2–8.3 (lowercase token names; values
///   without CR, LF or NUL and without whitespace around them; no connection-specific field,
///   `te` only `trailers`) and RFC 9110 §5.5's value grammar, as nghttp2 applies it (no other
///   control character than HTAB, no DEL).
/// - Its translation, checked in parts by the HTTP/1.1 rules as the session used to get it (now
///   the oracle of ``HTTP2/HTTP2RequestHeadValidator``), has the same method and exactly the
///   fields the HTTP/2 request had (no field appears that the app did not send: no request
///   smuggling through translation), and agrees with the strict
///   parser reading the same translation as text: both take it (one head, nothing after it,
///   the same fields and framing) or both refuse it (the proxy answers 400: safe).
/// - The validator, which builds the head the proxy serves in one pass, agrees with the
///   translation read back by the HTTP/1.1 rules: both find it inexpressible (a reset), both
///   refuse it (a 400 or 431), or both take it with the same method, target, `Host`, framing,
///   `Expect` and field lines, in order (``differences(_:endStream:)``).
/// - The codec never crashes, and a failure ends the connection (it then reads nothing more).
public enum HTTP2RequestCheck {
    /// The client connection preface, put before every input.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Runs the input; returns what it found wrong (empty: every property held).
    public static func run(_ raw: [UInt8]) -> [String] {
        let readSize = Int(raw.first ?? 0) % 64 + 1
        let message = preface + raw.dropFirst()
        let codec = HTTP2Codec(role: .server, settings: HTTP2Settings(maxConcurrentStreams: 16))
        var problems: [String] = []
        var offset = 0
        while offset < message.count {
            let end = min(message.count, offset + readSize)
            let events: [HTTP2Event]
            do {
                events = try Array(message[offset..<end]).withUnsafeBytes { try codec.receive($0) }
                _ = try codec.send { _ in }
            } catch {
                guard !codec.isActive else { return ["a failed codec still reads"] }
                return problems
            }
            offset = end
            for (index, event) in events.enumerated() {
                guard case .head(let stream, let head) = event else { continue }
                let ended = index + 1 < events.count && events[index + 1] == .end(stream: stream)
                problems += check(head, endStream: ended)
            }
        }
        return problems
    }

    /// The properties of one delivered request head and its translation.
    public static func check(_ head: HTTP2Head, endStream: Bool) -> [String] {
        var problems: [String] = []
        for field in head.fields {
            if field.name.isEmpty || field.name.utf8.contains(where: { !isTokenByte($0) || ($0 >= 0x41 && $0 <= 0x5A) }) {
                problems.append("a field name that is not a lowercase token was delivered")
            }
            if field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
                problems.append("a value with CR, LF or NUL was delivered")
            } else if field.value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                problems.append("a value with a control character or DEL was delivered")
            }
            if let first = field.value.utf8.first, let last = field.value.utf8.last,
               first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 {
                problems.append("a value with whitespace around it was delivered")
            }
            if ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"].contains(field.name) {
                problems.append("a connection-specific field was delivered: \(field.name)")
            }
            if field.name == "te" && field.value.lowercased() != "trailers" {
                problems.append("te other than trailers was delivered")
            }
        }
        problems += differences(head, endStream: endStream)
        guard let translation = HTTP2RequestTranslator.translate(head, endStream: endStream) else { return problems }
        // The head as the session used to get it (the validator's oracle), and the same
        // translation as HTTP/1.1 text read by the parser of every HTTP/1.1 request: the two
        // must agree.
        let direct = try? translation.requestHead()
        let bytes = translation.text
        let parsed = bytes.withUnsafeBytes { try? RequestHeadParser.parsePrefix($0) }
        if (direct == nil) != (parsed == nil) {
            problems.append("the head given in parts and its text are \(direct == nil ? "refused and taken" : "taken and refused")")
        }
        guard let request = direct else { return problems }  // refused: a 400, never forwarded
        if let (text, length) = parsed {
            if length != bytes.count { problems.append("the translation holds more than one head") }
            if text.fields.map({ "\($0.name): \($0.value)" }) != request.fields.map({ "\($0.name): \($0.value)" }) {
                problems.append("the head given in parts has other fields than its text")
            }
            if text.framing != request.framing { problems.append("the head given in parts is framed unlike its text") }
        }
        if request.method != head.method { problems.append("the method changed in translation") }
        if request.keepAlive { problems.append("a stream's head is kept alive") }
        let received = request.fields.map { "\($0.name.lowercased()): \(trimmed($0.value))" }
        if received != expectedFields(head, endStream: endStream) {
            problems.append("the translated fields differ from the request's: \(received) vs \(expectedFields(head, endStream: endStream))")
        }
        return problems
    }

    /// Where the validator and its oracle (the translation read back by the HTTP/1.1 rules,
    /// with the same limits) disagree about `head`: empty when they agree.
    public static func differences(_ head: HTTP2Head, endStream: Bool, headLimit: Int = 64 * 1024,
                                   maxFields: Int = 100) -> [String] {
        var lastHost: ParsedHost?
        let outcome = HTTP2RequestHeadValidator.validate(head, endStream: endStream, headLimit: headLimit,
                                                         maxFields: maxFields, lastHost: &lastHost)
        guard let translation = HTTP2RequestTranslator.translate(head, endStream: endStream) else {
            if case .malformed = outcome { return [] }
            return ["the oracle finds the head inexpressible, the validator does not"]
        }
        let oracle: RequestHead?
        if translation.text.count > headLimit {
            oracle = nil
        } else {
            oracle = try? translation.requestHead(maxFields: maxFields)
        }
        switch outcome {
        case .malformed:
            return ["the validator finds the head inexpressible, the oracle does not"]
        case .refused:
            return oracle == nil ? [] : ["the validator refuses a head the oracle takes"]
        case .head(let request, let body):
            guard let oracle else { return ["the validator takes a head the oracle refuses"] }
            var problems: [String] = []
            if request.method != oracle.method { problems.append("the methods differ") }
            if request.target != oracle.target { problems.append("the targets differ") }
            if request.host != oracle.host { problems.append("the hosts differ") }
            if request.framing != oracle.framing { problems.append("the framings differ") }
            if request.expectsContinue != oracle.expectsContinue { problems.append("Expect is read differently") }
            if request.keepAlive || oracle.keepAlive { problems.append("a stream's head is kept alive") }
            if request.fields.map({ "\($0.name): \($0.value)" }) != oracle.fields.map({ "\($0.name): \($0.value)" }) {
                problems.append("the field lines differ")
            }
            let expectedBody: HTTP2RequestHeadValidator.Body
            switch translation.framing {
            case .none: expectedBody = .none
            case .raw: expectedBody = .sized
            case .chunked: expectedBody = .streamed
            }
            if body != expectedBody { problems.append("the bodies follow differently") }
            return problems
        }
    }

    /// The fields the translation must carry: `Host`, the app's (without `host` and `te`, the
    /// cookies joined), the framing.
    private static func expectedFields(_ head: HTTP2Head, endStream: Bool) -> [String] {
        var fields = ["host: \(head.authority ?? head.fields.first("host") ?? "")"]
        var cookies: [String] = []
        var hasLength = false
        for field in head.fields {
            switch field.name {
            case "host", "te": continue
            case "cookie": if !field.value.isEmpty { cookies.append(field.value) }; continue
            case "content-length": hasLength = true
            default: break
            }
            fields.append("\(field.name): \(trimmed(field.value))")
        }
        if !cookies.isEmpty { fields.append("cookie: \(trimmed(cookies.joined(separator: "; ")))") }
        if !hasLength {
            if endStream {
                if ["POST", "PUT", "PATCH"].contains(head.method ?? "") { fields.append("content-length: 0") }
            } else {
                fields.append("transfer-encoding: chunked")
            }
        }
        return fields
    }

    /// A value as HTTP/1.1 reads it: without leading and trailing SP and HTAB (RFC 9110 §5.5).
    private static func trimmed(_ value: String) -> String {
        let bytes = Array(value.utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
              let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
