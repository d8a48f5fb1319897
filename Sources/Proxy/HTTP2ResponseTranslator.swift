import EventLoop
import HTTP1
import HTTP2

/// The HTTP/1.1 response a ``ClientSession`` wrote for one HTTP/2 stream, turned into that
/// stream's frames: interim heads, the head (without RFC 9113's connection-specific fields),
/// the body de-framed (a length, chunks with their trailers, or until the session closes), the
/// end. Bytes move only as far as the stream's send queue has room (``sendQueueLimit``): the
/// rest waits in the session's output, whose watermark is what slows the upstream down.
struct HTTP2ResponseTranslator {
    /// What the next response bytes are.
    enum Phase: Equatable {
        case head
        case length(UInt64)
        case chunked
        case untilClose
        case done
    }

    /// Body bytes queued in the codec per stream before the translation waits for the app.
    static let sendQueueLimit = 64 * 1024

    private(set) var phase = Phase.head
    private let requestMethod: String
    private var scanner = HeadScanner(limit: HeadLimits.responseHead)
    private var chunks = ChunkedDecoder()

    init(requestMethod: String) {
        self.requestMethod = requestMethod
    }

    /// What went wrong with the session's response (never the app's doing: the session writes
    /// well-formed HTTP/1.1): the stream is reset.
    struct Failure: Error {}

    /// Moves what `response` holds into `codec` for `stream`; `closed`: the session wrote its
    /// last byte (a close-delimited body ends there).
    mutating func translate(_ response: EventBuffer, closed: Bool, stream: Int32, codec: HTTP2Codec) throws {
        while true {
            switch phase {
            case .head:
                guard try translateHead(response, stream: stream, codec: codec) else { return }
            case .length(let left):
                let room = Self.sendQueueLimit - codec.bufferedBody(stream: stream)
                let n = min(Int(clamping: left), response.count, room)
                if n > 0 { move(n, from: response, stream: stream, codec: codec) }
                if UInt64(n) == left {
                    codec.endBody(stream: stream)
                    phase = .done
                } else {
                    phase = .length(left - UInt64(n))
                    return
                }
            case .chunked:
                guard try translateChunks(response, stream: stream, codec: codec) else { return }
            case .untilClose:
                let room = Self.sendQueueLimit - codec.bufferedBody(stream: stream)
                let n = min(response.count, room)
                if n > 0 { move(n, from: response, stream: stream, codec: codec) }
                if closed && response.isEmpty {
                    codec.endBody(stream: stream)
                    phase = .done
                }
                return
            case .done:
                response.drain(response.count)
                return
            }
        }
    }

    /// Translates one head if it is all there; false when more bytes are needed.
    private mutating func translateHead(_ response: EventBuffer, stream: Int32, codec: HTTP2Codec) throws -> Bool {
        let available = response.count
        guard available > 0 else { return false }
        let method = requestMethod
        let parsed: (ResponseHead, Int)? = try response.withContiguousPrefix(HeadLimits.responseHead) { (bytes) throws(HTTPParseError) in
            guard let length = try scanner.scan(bytes) else { return nil }
            return (try ResponseHeadParser.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<length]), requestMethod: method), length)
        }
        guard let (head, length) = parsed else { return false }
        response.drain(length)
        scanner.reset()
        if head.status < 200 {
            // 101 never reaches here: an HTTP/2 stream is not upgraded (the session's request
            // carried no Upgrade). Other interim responses pass on.
            guard head.status != 101 else { throw Failure() }
            try codec.submitResponse(stream: stream, HTTP2Head(status: head.status, fields: Self.http2Fields(head.fields)), endStream: false)
            return true
        }
        let tunnel = requestMethod == "CONNECT" && head.status / 100 == 2
        var framing = head.framing
        if tunnel { framing = .untilClose }
        let bodyless: Bool
        switch framing {
        case .none, .contentLength(0): bodyless = true
        default: bodyless = false
        }
        var fields = Self.http2Fields(head.fields)
        if tunnel { fields.removeAll("content-length") }
        try codec.submitResponse(stream: stream, HTTP2Head(status: head.status, fields: fields), endStream: bodyless)
        switch framing {
        case .none, .contentLength(0): phase = .done
        case .contentLength(let n): phase = .length(n)
        case .chunked: phase = .chunked
        case .untilClose: phase = .untilClose
        }
        return true
    }

    /// Decodes chunks while bytes and room last; false when it must wait.
    private mutating func translateChunks(_ response: EventBuffer, stream: Int32, codec: HTTP2Codec) throws -> Bool {
        while true {
            let step = try response.withContiguousPrefix(min(response.count, 64 * 1024 + 16)) { try chunks.next($0) }
            switch step {
            case .needMore:
                return false
            case .chunkHeader(_, let consumed), .chunkEnd(let consumed):
                response.drain(consumed)
            case .data(let remaining):
                let room = Self.sendQueueLimit - codec.bufferedBody(stream: stream)
                let n = min(Int(clamping: remaining), response.count, room)
                guard n > 0 else { return false }
                move(n, from: response, stream: stream, codec: codec)
                chunks.consumeData(n)
            case .end(let consumed, let trailers):
                response.drain(consumed)
                codec.endBody(stream: stream, trailers: Self.http2Fields(trailers))
                phase = .done
                return true
            }
        }
    }

    private func move(_ n: Int, from response: EventBuffer, stream: Int32, codec: HTTP2Codec) {
        response.withContiguousPrefix(n) { codec.sendBody(stream: stream, $0) }
        response.drain(n)
    }

    /// `fields` without what RFC 9113 §8.2.2 forbids in HTTP/2 (connection-specific fields and
    /// the fields `Connection` names), names lowercased.
    static func http2Fields(_ fields: HTTPFields) -> HTTPFields {
        let named = Set(fields.connectionOptions().map { $0.lowercased() })
        var result = HTTPFields()
        for field in fields {
            let name = field.name.lowercased()
            switch name {
            case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te":
                continue
            default:
                if named.contains(name) { continue }
                result.append(HTTPField(name: name, value: field.value))
            }
        }
        return result
    }
}
