import EventLoop
import HTTP1

/// One token request on one connection: writes the request, reads the response head and the
/// body in whatever framing it has, and completes exactly once. Confined to the token loop.
///
/// The connection (holding this object as its delegate) and the timeout timer (capturing it)
/// keep it alive until ``finish(_:)`` closes and cancels both.
final class TokenExchange: ConnectionDelegate {
    private enum Phase {
        case head
        case fixed(remaining: Int)
        case chunked
        case untilClose
        case done
    }

    /// Largest head accepted, and the most bytes made contiguous for a chunk-size line or trailers.
    private static let maxHead = 64 * 1024
    private static let maxFraming = 72 * 1024

    private let maxBodyBytes: Int
    private let requestMethod: String
    private var completion: ((Result<TokenHTTPResponse, TokenTransportError>) -> Void)?
    private var connection: (any ByteStream)?
    private var timer: Timer?
    private var phase = Phase.head
    private var scanner = HeadScanner(limit: TokenExchange.maxHead)
    private var decoder = ChunkedDecoder()
    private var head: ResponseHead?
    private var body: [UInt8] = []

    init(maxBodyBytes: Int, requestMethod: String,
         completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void) {
        self.maxBodyBytes = maxBodyBytes
        self.requestMethod = requestMethod
        self.completion = completion
    }

    /// Queues the request (sent once connected) and arms the overall timeout.
    func start(connection: any ByteStream, request: [UInt8], timeout: Duration, on loop: EventLoop) {
        self.connection = connection
        connection.write(request)
        timer = Timer(on: loop, after: timeout) { [self] in finish(.failure(.timeout(timeout))) }
        if connection.isConnected { connection.startReading() }
    }

    /// Reports `error` from a later loop turn (callers never see their completion re-entered).
    func failLater(_ error: TokenTransportError, on loop: EventLoop) {
        LoopBound(self, on: loop).run { exchange in exchange.finish(.failure(error)) }
    }

    func connectionDidConnect(_ connection: any ByteStream) {
        connection.startReading()
    }

    func connectionDidRead(_ connection: any ByteStream) {
        do {
            try process(connection.input)
        } catch {
            finish(.failure(error))
        }
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        if case .untilClose = phase, reason == .endOfStream {
            do {
                try process(connection.input)
                complete()
            } catch {
                finish(.failure(error))
            }
            return
        }
        if case .timeout = reason {
            finish(.failure(.connection(.timeout)))
        } else {
            finish(.failure(.connection(reason)))
        }
    }

    private func process(_ input: EventBuffer) throws(TokenTransportError) {
        while true {
            switch phase {
            case .head:
                guard try readHead(input) else { return }
            case .fixed(let remaining):
                let take = min(remaining, input.count)
                try collect(take, from: input)
                if take == remaining { complete(); return }
                phase = .fixed(remaining: remaining - take)
                return
            case .chunked:
                guard try readChunked(input) else { return }
            case .untilClose:
                try collect(input.count, from: input)
                return
            case .done:
                input.drain(input.count)
                return
            }
        }
    }

    /// Parses the head once it is complete; returns false when more bytes are needed.
    private func readHead(_ input: EventBuffer) throws(TokenTransportError) -> Bool {
        let length: Int?
        do {
            length = try input.withContiguousPrefix(TokenExchange.maxHead) { (bytes) throws(HTTPParseError) -> Int? in
                try scanner.scan(bytes)
            }
        } catch {
            throw .malformedResponse(String(describing: error))
        }
        guard let length else { return false }
        let parsed: ResponseHead
        do {
            parsed = try input.withContiguousPrefix(length) { (bytes) throws(HTTPParseError) -> ResponseHead in
                try ResponseHeadParser.parse(bytes, requestMethod: requestMethod)
            }
        } catch {
            throw .malformedResponse(String(describing: error))
        }
        input.drain(length)
        scanner.reset()
        if parsed.status < 200 { return true }  // an interim response: the real one follows
        head = parsed
        switch parsed.framing {
        case .none:
            complete()
            return false
        case .contentLength(let length):
            guard length <= UInt64(maxBodyBytes) else { throw .bodyTooLarge(limit: maxBodyBytes) }
            if length == 0 { complete(); return false }
            phase = .fixed(remaining: Int(length))
        case .chunked:
            phase = .chunked
        case .untilClose:
            phase = .untilClose
        }
        return true
    }

    /// Decodes chunked framing; returns false when more bytes are needed or the body is complete.
    private func readChunked(_ input: EventBuffer) throws(TokenTransportError) -> Bool {
        while true {
            let step: ChunkedDecoder.Step
            do {
                step = try input.withContiguousPrefix(TokenExchange.maxFraming) { (bytes) throws(HTTPParseError) -> ChunkedDecoder.Step in
                    try decoder.next(bytes)
                }
            } catch {
                throw .malformedResponse(String(describing: error))
            }
            switch step {
            case .needMore:
                return false
            case .chunkHeader(let size, let consumed):
                guard size <= UInt64(maxBodyBytes - body.count) else { throw .bodyTooLarge(limit: maxBodyBytes) }
                input.drain(consumed)
            case .data(let remaining):
                let take = Int(min(remaining, UInt64(input.count)))
                if take == 0 { return false }
                try collect(take, from: input)
                decoder.consumeData(take)
            case .chunkEnd(let consumed):
                input.drain(consumed)
            case .end(let consumed, _):
                input.drain(consumed)
                complete()
                return false
            }
        }
    }

    /// Moves `count` bytes from `input` into the body, within the limit.
    private func collect(_ count: Int, from input: EventBuffer) throws(TokenTransportError) {
        if count == 0 { return }
        guard body.count + count <= maxBodyBytes else { throw .bodyTooLarge(limit: maxBodyBytes) }
        input.withContiguousPrefix(count) { body.append(contentsOf: $0) }
        input.drain(count)
    }

    private func complete() {
        guard let head else { return }
        phase = .done
        finish(.success(TokenHTTPResponse(status: head.status, fields: head.fields, body: body)))
    }

    /// Completes once: cancels the timer, closes the connection, calls back.
    private func finish(_ result: Result<TokenHTTPResponse, TokenTransportError>) {
        guard let completion else { return }
        self.completion = nil
        phase = .done
        timer?.cancel()
        timer = nil
        connection?.close()
        connection = nil
        body = []
        completion(result)
    }
}
