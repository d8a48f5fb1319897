import EventLoop
import HTTP1
import HTTPMessage

/// A request answered by the session itself (a ``LocalServer``'s): the body is collected, the
/// local responder is asked, its answer written. The connection's machine decides each step
/// (``LocalAnswer`` is its state); this is the request's I/O record, as ``ExchangeIO`` is a
/// proxied one's.
final class LocalCall {
    /// The request head.
    let head: RequestHead
    /// Reads the body (Content-Length or chunked) up to the server's limit.
    var collector: BodyCollector
    /// The whole body, once collected.
    var body: [UInt8] = []
    /// The responder's answer, once given.
    var response: LocalResponse?

    init(head: consuming RequestHead, collector: BodyCollector) {
        self.head = head
        self.collector = collector
    }
}

extension ClientSession {
    /// `100 Continue`, sent before reading a body the client holds back for it.
    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Starts answering `head` with the local responder (no route, no upstream).
    @inline(never)
    func serveLocally(_ head: consuming RequestHead, _ service: LocalService) {
        if case .authority = head.target {
            // No tunnels here; the bytes after a CONNECT head are not HTTP.
            refuse(ProxyError(status: 405, type: "http_request_denied", message: "CONNECT is not supported by this server"),
                   head: head, connect: true)
            return
        }
        let request = Self.exchangeRequest(for: head, credential: .none)
        let collector = BodyCollector(framing: head.framing, limit: service.limits.maxBodyBytes)
        let tooLarge = collector.declaredTooLarge
        local = LocalCall(head: head, collector: collector)
        perform(connection.localRequestStarted(request, bodyTooLarge: tooLarge))
    }

    /// The locally answered request failed (a body too large or malformed, or stalled):
    /// counted and logged, answered, closed.
    func failLocally(_ failure: ExchangeFailure) {
        let head = local?.head
        local = nil
        let error = proxyError(for: failure, io: nil)
        account(head, status: error.status, error: error.type)
        answer(error, keepClient: false)
    }

    func collectBody(_ call: LocalCall, sendContinue: Bool) -> ClientConnectionStateMachine.Action {
        if sendContinue { client.write(Self.continueBytes) }
        // A client that stops sending its body is ended by its read timeout (a 408).
        client.setTimeouts(read: context.timeouts.bodyIdle, write: context.timeouts.bodyIdle)
        let progress: LocalAnswer.BodyProgress
        switch call.collector.read(from: client.input) {
        case .needMore: progress = .needMore
        case .complete(let body):
            call.body = body
            progress = .complete
        case .tooLarge: progress = .tooLarge
        case .invalid: progress = .malformed
        }
        return connection.localBodyCollected(progress)
    }

    func answer(_ call: LocalCall) {
        guard let service = context.local else { return }
        // The responder may take its time (a token status, readiness): no read deadline meanwhile.
        client.setTimeouts(read: nil, write: context.timeouts.bodyIdle)
        let request = LocalRequest(head: call.head, body: call.body)
        call.body = []
        // Bounded: a responder that never answers does not hold the connection forever.
        arm(after: context.timeouts.idle)
        let loop = context.loop
        service.responder(request) { [weak self] response in
            loop.assertConfined()
            // A late answer (the client left) or a second one is ignored.
            guard let self, self.local === call, call.response == nil else { return }
            call.response = response
            self.perform(self.connection.localAnswered(closeRequested: response.asksToClose))
        }
    }

    func respond(_ call: LocalCall, keepClient: Bool) -> ClientConnectionStateMachine.Action {
        local = nil
        disarm()
        guard let response = call.response else { return .none }
        let encoded = LocalResponseEncoder.encode(response, method: call.head.method, version: call.head.version,
                                                  keepAlive: keepClient)
        client.write(encoded.bytes)
        guard keepClient else {
            close()
            return .none
        }
        // Not backlogged: `resumeRequests`. An answer given at once returns into the
        // readRequests loop, which goes on with pipelined requests; a later one starts it again.
        return connection.localAnswerWritten(backlogged: client.output.count >= WorkerContext.highWatermark)
    }
}
