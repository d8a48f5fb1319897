import EventLoop
import HTTP1
import HTTPMessage

/// One token request on one connection: writes the request, reads the response head and the
/// body in whatever framing it has, and completes exactly once. Confined to the token loop.
///
/// The connection (holding this object as its delegate) and the timeout timer (capturing it)
/// keep it alive until ``finish(_:)`` closes and cancels both.
final class TokenHTTPCall: ConnectionDelegate {
    private enum Phase {
        case head
        case body(ResponseHead, BodyCollector)
        case done
    }

    /// Largest head accepted.
    private static let maxHead = 64 * 1024

    private let maxBodyBytes: Int
    private let requestMethod: String
    private var completion: ((Result<TokenHTTPResponse, TokenTransportError>) -> Void)?
    private var connection: (any ByteStream)?
    private var timer: Timer?
    private var phase = Phase.head
    private var reader = HeadReader(limit: TokenHTTPCall.maxHead)

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
        if case .body(_, let collector) = phase, reason == .endOfStream, collector.endsAtClose {
            // A body without a length ends with the connection: take what arrived, then finish.
            do {
                try process(connection.input)
            } catch {
                finish(.failure(error))
                return
            }
            if case .body(let head, var collector) = phase, case .complete(let body) = collector.finishAtClose() {
                finish(.success(TokenHTTPResponse(status: head.status, fields: head.fields, body: body)))
                return
            }
        }
        if case .timeout = reason {
            finish(.failure(.connection(.timeout)))
        } else {
            finish(.failure(.connection(reason)))
        }
    }

    /// Reads the response head (skipping interim ones), then its body.
    private func process(_ input: EventBuffer) throws(TokenTransportError) {
        while true {
            switch phase {
            case .head:
                let parsed: ResponseHead?
                do {
                    parsed = try reader.read(from: input) { bytes throws(HTTPParseError) in
                        try ResponseHeadParser.parse(bytes, requestMethod: requestMethod)
                    }
                } catch {
                    throw .malformedResponse(String(describing: error))
                }
                guard let head = parsed else { return }
                if head.status < 200 { continue }  // an interim response: the real one follows
                let collector = BodyCollector(framing: head.framing, limit: maxBodyBytes)
                if collector.declaredTooLarge { throw .bodyTooLarge(limit: maxBodyBytes) }
                phase = .body(head, collector)
            case .body(let head, var collector):
                let outcome = collector.read(from: input)
                phase = .body(head, collector)
                switch outcome {
                case .needMore:
                    return
                case .complete(let body):
                    finish(.success(TokenHTTPResponse(status: head.status, fields: head.fields, body: body)))
                    return
                case .tooLarge:
                    throw .bodyTooLarge(limit: maxBodyBytes)
                case .invalid(let message):
                    throw .malformedResponse(message)
                }
            case .done:
                input.drain(input.count)
                return
            }
        }
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
        completion(result)
    }
}
