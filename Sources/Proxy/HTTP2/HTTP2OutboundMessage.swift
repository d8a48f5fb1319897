import EventLoop
import HTTP1
import HTTP2

/// One message the sidecar sends on an HTTP/2 stream, framed from typed parts: the response to
/// an app's stream (``HTTP2StreamSession``: its interim heads, its head as located fields,
/// ``announce(_:committed:)``), or the request to an HTTP/2 upstream (``HTTP2UpstreamLease``:
/// its head as name/value pairs, ``submitRequest(_:scheme:body:codec:)``); then the body's bytes as
/// DATA (by its length, until the sender ends it with its trailers, until the sender closes —
/// or, for an HTTP/1.1 app's chunked request to an HTTP/2 upstream, de-chunked, its trailers
/// as HTTP/2 trailers), then the end. No HTTP/1.1 text is parsed. Bytes move only as far as the
/// peer's windows let them go on (at most ``sendQueueLimit`` queued): the rest waits in the
/// sender's buffer, whose watermark (and the buffer budget) is what slows the other side down.
struct HTTP2OutboundMessage {
    /// What the next bytes of the body buffer are.
    enum Phase: Equatable {
        /// No head sent yet (a response's waits for ``announce(_:committed:)``; a request's for
        /// ``submitRequest(_:scheme:body:codec:)``).
        case head
        /// This many more bytes, then the end.
        case length(UInt64)
        /// An HTTP/1.1 app's chunked body, de-chunked (its trailers as HTTP/2 trailers).
        case chunked
        /// Bytes until the sender closes.
        case untilClose
        /// Unframed bytes until the sender says the message ended (``endMessage(trailers:)``):
        /// a body of unknown length, its trailers given apart.
        case untilEnd
        case done
    }

    /// Body bytes queued in the codec per stream, at most, before the message waits.
    static let sendQueueLimit = 64 * 1024

    private(set) var phase = Phase.head
    /// The sender said the message ended (``endMessage(trailers:)``), with these trailers.
    private var messageEnded = false
    private var endTrailers: HTTPFields?
    /// The stream the message goes on (a request's: 0 until its head opened it).
    private(set) var stream: Int32
    /// The method of the request (the app's, for a response; its own, for a request).
    private(set) var requestMethod: String
    private var chunks = ChunkedDecoder()
    /// The interim (1xx) heads to send before the final one, by status.
    private var interim: [Int] = []
    /// The final response head, handed over as fields, and whether it may go out.
    private var announced: AnnouncedHead?
    private var announcedCommitted = false

    /// A response head: its status, its field lines located in `bytes`, and how the body
    /// written after it is framed.
    struct AnnouncedHead {
        let status: Int
        private(set) var bytes: [UInt8]
        private(set) var lines: [FieldLine]
        /// What the bytes after the head are.
        let body: Phase

        init(status: Int, bytes: [UInt8], lines: [FieldLine], body: Phase) {
            self.status = status
            self.bytes = bytes
            self.lines = lines
            self.body = body
        }

        /// A head of `fields` (the proxy's own: an error's), located as they are written.
        init(status: Int, fields: HTTPFields, body: Phase) {
            var bytes: [UInt8] = []
            var lines: [FieldLine] = []
            for field in fields {
                let name = bytes.count
                bytes.append(contentsOf: field.name.utf8)
                let value = bytes.count + 2
                bytes.append(contentsOf: ": ".utf8)
                bytes.append(contentsOf: field.value.utf8)
                lines.append(FieldLine(name: name..<value - 2, value: value..<bytes.count))
                bytes.append(contentsOf: "\r\n".utf8)
            }
            self.init(status: status, bytes: bytes, lines: lines, body: body)
        }

        /// ``bytes``, moved out (their storage serves another head; no copy shares it).
        mutating func takeBytes() -> [UInt8] {
            var taken: [UInt8] = []
            swap(&taken, &bytes)
            return taken
        }

        /// ``lines``, moved out.
        mutating func takeLines() -> [FieldLine] {
            var taken: [FieldLine] = []
            swap(&taken, &lines)
            return taken
        }
    }

    /// The response to an app's `stream`, whose request had `requestMethod`.
    init(requestMethod: String, stream: Int32) {
        self.requestMethod = requestMethod
        self.stream = stream
    }

    /// A request to an upstream (its stream opens with its head).
    init() {
        requestMethod = ""
        stream = 0
    }

    /// Opens a stream on `codec` (an upstream's, with `scheme`) for the request `plan` makes;
    /// `body` says how the bytes after it are framed (``Phase/done``: none, the head ends the
    /// stream).
    mutating func submitRequest(_ plan: UpstreamRequestPlan, scheme: String, body: Phase, codec: HTTP2Codec) throws {
        requestMethod = plan.head.method
        stream = try plan.submitHTTP2(scheme: scheme, endStream: body == .done, codec: codec)
        phase = body
    }

    /// Moves what is there of the message into `codec` as far as its send queue has room:
    /// heads, body bytes out of `body` (drained as they go), the end. `closed`: the sender
    /// closed (a body until the close ends with it).
    mutating func send(_ body: EventBuffer, closed: Bool, codec: HTTP2Codec) throws {
        while true {
            switch phase {
            case .head:
                if !interim.isEmpty {
                    for status in interim {
                        try codec.submitResponse(stream: stream, status: status, fields: FieldSectionView(bytes: UnsafeRawBufferPointer(start: nil, count: 0), lines: []),
                                                 endStream: false)
                    }
                    interim.removeAll()
                }
                guard announced != nil, announcedCommitted else { return }
                try submitAnnounced(codec: codec)
            case .length(let left):
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(Int(clamping: left), body.count, room)
                if n > 0 { move(n, from: body, codec: codec) }
                if UInt64(n) == left {
                    codec.endBody(stream: stream)
                    phase = .done
                } else {
                    phase = .length(left - UInt64(n))
                    return
                }
            case .chunked:
                guard try sendChunks(body, codec: codec) else { return }
            case .untilClose:
                // (The buffer's length read once: each read is a call into libevent.)
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit), buffered = body.count
                let n = min(buffered, room)
                if n > 0 { move(n, from: body, codec: codec) }
                if closed && n == buffered {
                    codec.endBody(stream: stream)
                    phase = .done
                }
                return
            case .untilEnd:
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit), buffered = body.count
                let n = min(buffered, room)
                if n > 0 { move(n, from: body, codec: codec) }
                guard messageEnded && n == buffered else { return }
                codec.endBody(stream: stream, trailers: endTrailers)
                endTrailers = nil
                phase = .done
            case .done:
                // (What comes after the end — a body to a HEAD, bytes past a length — is dropped.)
                body.drain(body.count)
                return
            }
        }
    }

    /// An interim response (1xx, not 101) goes before the final head.
    mutating func announceInterim(status: Int) {
        guard phase == .head, status >= 100, status < 200, status != 101 else { return }
        interim.append(status)
    }

    /// The final response head, as fields: it goes out once `committed` (a head whose body's
    /// first bytes are still checked is not yet: ``commitAnnounced()`` or ``dropAnnounced()``).
    mutating func announce(_ head: AnnouncedHead, committed: Bool) {
        announced = head
        announcedCommitted = committed
    }

    /// The body written after a ``Phase/untilEnd`` head ended, with `trailers` (or none).
    mutating func endMessage(trailers: HTTPFields?) {
        messageEnded = true
        endTrailers = trailers
    }

    /// The announced head may go out (its body's first bytes checked).
    mutating func commitAnnounced() { announcedCommitted = true }

    /// The announced head is not sent (its body turned out malformed): the error response
    /// announced next is the stream's head.
    mutating func dropAnnounced() {
        announced = nil
        announcedCommitted = false
    }

    private mutating func submitAnnounced(codec: HTTP2Codec) throws {
        guard let head = announced else { return }
        announced = nil
        let stream = stream
        try head.bytes.withUnsafeBytes { bytes in
            try codec.submitResponse(stream: stream, status: head.status, fields: FieldSectionView(bytes: bytes, lines: head.lines),
                                     endStream: head.body == .done)
        }
        phase = head.body
        // (The codec copied the fields: the storage may serve another head.)
        spentHead = consume head
    }

    /// The last head sent, until its storage is taken back (``takeSpentHead()``).
    private var spentHead: AnnouncedHead?

    /// The sent head's storage, once (for the worker's next head).
    mutating func takeSpentHead() -> AnnouncedHead? {
        guard spentHead != nil else { return nil }
        var taken: AnnouncedHead?
        swap(&taken, &spentHead)
        return taken
    }

    /// How a body framed as `framing` goes.
    static func phase(for framing: BodyFraming) -> Phase {
        switch framing {
        case .none, .contentLength(0): .done
        case .contentLength(let n): .length(n)
        case .chunked: .chunked
        case .untilClose: .untilClose
        }
    }

    /// De-chunks what `body` holds of an HTTP/1.1 chunked body; true once its last chunk (and
    /// trailers) went.
    private mutating func sendChunks(_ body: EventBuffer, codec: HTTP2Codec) throws -> Bool {
        while true {
            let step = try body.withContiguousPrefix(min(body.count, 64 * 1024 + 16)) { try chunks.next($0) }
            switch step {
            case .needMore:
                return false
            case .chunkHeader(_, let consumed), .chunkEnd(let consumed):
                body.drain(consumed)
            case .data(let remaining):
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(Int(clamping: remaining), body.count, room)
                guard n > 0 else { return false }
                move(n, from: body, codec: codec)
                chunks.consumeData(n)
            case .end(let consumed, let trailers):
                body.drain(consumed)
                codec.endBody(stream: stream, trailers: trailers)
                phase = .done
                return true
            }
        }
    }

    private func move(_ n: Int, from body: EventBuffer, codec: HTTP2Codec) {
        body.withContiguousFirst(n) { codec.sendBody(stream: stream, $0) }
        body.drain(n)
    }
}

extension HTTP2OutboundMessage {
    /// Announces the proxy's own error response to `error` as the final head (committed), and
    /// returns its body, to send after it: none for a `HEAD` request or a gRPC call. Fields only
    /// HTTP/1.1 has (`Connection: close`) are never added: the stream ends with the response.
    mutating func announceError(_ error: ProxyError, retryAfter: Int?, grpc: Bool) -> [UInt8] {
        let answer = ErrorResponse.response(for: error, close: false, retryAfter: retryAfter, grpc: grpc)
        let body = requestMethod == "HEAD" ? [] : answer.body
        announce(AnnouncedHead(status: answer.status, fields: answer.fields, body: body.isEmpty ? .done : .length(UInt64(body.count))),
                 committed: true)
        return body
    }
}
