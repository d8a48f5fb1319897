import EventLoop
import HTTP1
import HTTP2

/// An HTTP/1.1 message a ``ClientSession`` wrote, turned into one HTTP/2 stream's frames: the
/// response it wrote for an app's stream (``HTTP2ServerSession``), or the body of the request it
/// sends an HTTP/2 upstream (``HTTP2UpstreamStream``; the request's head comes typed,
/// ``submitRequest(_:body:codec:)``). Interim heads, the head (without RFC 9113's
/// connection-specific fields), the body de-framed (a length, chunks with their trailers, or
/// until the session closes), the end. Bytes move only as far as the peer's windows let them
/// go on (at most ``sendQueueLimit`` queued): the rest waits in the session's output, whose
/// watermark (and the buffer budget) is what slows the other side down.
struct HTTP2MessageTranslator {
    /// Which message it translates.
    enum Kind {
        /// A response to a request with this method, on a stream the app opened.
        case response(requestMethod: String)
        /// A request to an upstream: its typed head opens the stream.
        case request
    }

    /// What the next response bytes are.
    enum Phase: Equatable {
        case head
        case length(UInt64)
        case chunked
        case untilClose
        /// Unframed bytes until the session says the message ended (``endMessage(trailers:)``):
        /// a response of unknown length to an app's stream, its trailers given apart.
        case untilEnd
        case done
    }

    /// Body bytes queued in the codec per stream, at most, before the translation waits.
    static let sendQueueLimit = 64 * 1024

    private(set) var phase = Phase.head
    /// The session said the message ended (``endMessage(trailers:)``), with these trailers.
    private var messageEnded = false
    private var endTrailers: HTTPFields?
    private let kind: Kind
    /// The stream the message goes on (a request's: 0 until its head opened it).
    private(set) var stream: Int32
    /// A request's method, once its head was read.
    private(set) var requestMethod = ""
    private var scanner: HeadScanner
    private var chunks = ChunkedDecoder()
    /// A final response head the session handed over as fields (``announce(_:committed:after:)``)
    /// instead of writing it as text, and whether it may go out.
    private var announced: AnnouncedHead?
    private var announcedCommitted = false
    /// Bytes of text heads (interim responses) written before the announced head: translated
    /// first.
    private var textBeforeAnnounced = 0

    /// A response head as the session has it: its status, its forwarded field lines located in
    /// `bytes`, and how the body written after it is framed.
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

    /// Translates the response to a `requestMethod` request on the app's `stream`.
    init(requestMethod: String, stream: Int32) {
        kind = .response(requestMethod: requestMethod)
        self.stream = stream
        scanner = HeadScanner(limit: HeadLimits.responseHead)
    }

    /// Translates a request's body to an upstream; its typed head opens the stream
    /// (``submitRequest(_:body:codec:)``).
    init() {
        kind = .request
        stream = 0
        scanner = HeadScanner(limit: HeadLimits.requestHead)
    }

    /// Opens the stream with the request's typed head (the exchange's rewrite, as name/value
    /// pairs); `body`: how the body written after it is framed (``phase(for:)``).
    mutating func submitRequest(_ head: HTTP2Head, body: Phase, codec: HTTP2Codec) throws {
        requestMethod = head.method ?? ""
        stream = try codec.submitRequest(head, endStream: body == .done)
        phase = body
    }

    /// What went wrong with the session's response (never the app's doing: the session writes
    /// well-formed HTTP/1.1): the stream is reset.
    struct Failure: Error {}

    /// Moves what `response` (the message's bytes) holds into `codec` for ``stream``; `closed`:
    /// the session wrote its last byte (a close-delimited body ends there).
    mutating func translate(_ response: EventBuffer, closed: Bool, codec: HTTP2Codec) throws {
        while true {
            switch phase {
            case .head:
                if announced != nil && textBeforeAnnounced == 0 {
                    guard announcedCommitted else { return }
                    try submitAnnounced(codec: codec)
                    continue
                }
                switch kind {
                case .response(let method):
                    guard try translateHead(response, requestMethod: method, codec: codec) else { return }
                case .request:
                    // (Its head comes typed: until then, the body waits.)
                    return
                }
            case .length(let left):
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(Int(clamping: left), response.count, room)
                if n > 0 { move(n, from: response, codec: codec) }
                if UInt64(n) == left {
                    codec.endBody(stream: stream)
                    phase = .done
                } else {
                    phase = .length(left - UInt64(n))
                    return
                }
            case .chunked:
                guard try translateChunks(response, codec: codec) else { return }
            case .untilClose:
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(response.count, room)
                if n > 0 { move(n, from: response, codec: codec) }
                if closed && response.isEmpty {
                    codec.endBody(stream: stream)
                    phase = .done
                }
                return
            case .untilEnd:
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(response.count, room)
                if n > 0 { move(n, from: response, codec: codec) }
                guard messageEnded && response.isEmpty else { return }
                codec.endBody(stream: stream, trailers: endTrailers)
                endTrailers = nil
                phase = .done
            case .done:
                response.drain(response.count)
                return
            }
        }
    }

    /// The session's final response head, as fields: it goes to the codec without being written
    /// and read back as text, once the `textBytes` already written before it (interim heads)
    /// are translated. Not `committed`: it waits (a chunked body's first bytes are checked
    /// first) until ``commitAnnounced()``, or is dropped (``dropAnnounced()``) for the error
    /// response written instead.
    mutating func announce(_ head: AnnouncedHead, committed: Bool, after textBytes: Int) {
        announced = head
        announcedCommitted = committed
        textBeforeAnnounced = textBytes
    }

    /// The message (a body of ``Phase/untilEnd``) ends once what is written of it is out, with
    /// `trailers`. A session that closes without saying so leaves it incomplete: the stream is
    /// reset, never ended as if whole.
    mutating func endMessage(trailers: HTTPFields?) {
        messageEnded = true
        endTrailers = trailers
    }

    /// The announced head may go out.
    mutating func commitAnnounced() { announcedCommitted = true }

    /// The announced head will not go out (the session answers with an error instead).
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

    /// The announced head once it went to the codec, until taken.
    private var spentHead: AnnouncedHead?

    /// The announced head that went to the codec (for its storage), handed over once.
    mutating func takeSpentHead() -> AnnouncedHead? {
        guard spentHead != nil else { return nil }
        var taken: AnnouncedHead?
        swap(&taken, &spentHead)
        return taken
    }

    /// What the bytes after a response head framed as `framing` are.
    static func phase(for framing: BodyFraming) -> Phase {
        switch framing {
        case .none, .contentLength(0): .done
        case .contentLength(let n): .length(n)
        case .chunked: .chunked
        case .untilClose: .untilClose
        }
    }

    /// Translates one response head if it is all there; false when more bytes are needed. The
    /// head is read in place and its fields handed to the codec from the bytes (no String per
    /// field: the session wrote them, well-formed, a moment ago).
    private mutating func translateHead(_ response: EventBuffer, requestMethod: String, codec: HTTP2Codec) throws -> Bool {
        guard response.count > 0 else { return false }
        let stream = stream
        let read = try response.withContiguousPrefix(HeadLimits.responseHead) { bytes throws -> (phase: Phase, length: Int)? in
            guard let length = try scanner.scan(bytes) else { return nil }
            let head = try ResponseHeadParser.view(UnsafeRawBufferPointer(rebasing: bytes[0..<length]), requestMethod: requestMethod)
            if head.status < 200 {
                // 101 never reaches here: an HTTP/2 stream is not upgraded (the session's request
                // carried no Upgrade). Other interim responses pass on.
                guard head.status != 101 else { throw Failure() }
                try codec.submitResponse(stream: stream, status: head.status, fields: head.section, endStream: false)
                return (.head, length)
            }
            // A tunnel's bytes follow a CONNECT's 2xx until the close, whatever its head says.
            let tunnel = RequestHeadParser.isConnect(requestMethod) && head.status / 100 == 2
            let next = Self.phase(for: tunnel ? .untilClose : head.framing)
            try codec.submitResponse(stream: stream, status: head.status, fields: head.section,
                                     omitting: tunnel ? "content-length" : nil, endStream: next == .done)
            return (next, length)
        }
        // (Drained only now: the view read the buffer's bytes in place.)
        guard let read else { return false }
        response.drain(read.length)
        scanner.reset()
        phase = read.phase
        textBeforeAnnounced = max(0, textBeforeAnnounced - read.length)
        return true
    }

    /// Decodes chunks while bytes and room last; false when it must wait.
    private mutating func translateChunks(_ response: EventBuffer, codec: HTTP2Codec) throws -> Bool {
        while true {
            let step = try response.withContiguousPrefix(min(response.count, 64 * 1024 + 16)) { try chunks.next($0) }
            switch step {
            case .needMore:
                return false
            case .chunkHeader(_, let consumed), .chunkEnd(let consumed):
                response.drain(consumed)
            case .data(let remaining):
                let room = codec.sendRoom(stream: stream, limit: Self.sendQueueLimit)
                let n = min(Int(clamping: remaining), response.count, room)
                guard n > 0 else { return false }
                move(n, from: response, codec: codec)
                chunks.consumeData(n)
            case .end(let consumed, let trailers):
                response.drain(consumed)
                codec.endBody(stream: stream, trailers: trailers)
                phase = .done
                return true
            }
        }
    }

    private func move(_ n: Int, from response: EventBuffer, codec: HTTP2Codec) {
        response.withContiguousPrefix(n) { codec.sendBody(stream: stream, $0) }
        response.drain(n)
    }
}
