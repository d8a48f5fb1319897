import EventLoop
import HTTP1
import HTTPMessage
import TokenManager

/// Serves an app's requests one exchange at a time: routes each request, drives its
/// ``Exchange`` and answers it. Two kinds, one for each end an app's request comes through:
/// a ``ClientSession`` serves an app's connection (it reads HTTP/1.1 heads, keeps the connection
/// between requests, opens tunnels, intercepts, answers locally), an ``HTTP2StreamSession`` one
/// stream of an app's HTTP/2 connection (its head given typed by the connection, one request).
/// Everything about the exchange itself — routing, token injection, the pool, 401 and gRPC
/// replays, relaying, spooling, Proxy-Status errors, the access log, metrics and traces — is
/// written once, here and in the `ExchangeSession+…` files.
///
/// The session decides nothing about an exchange: it turns client, pool, credential and timer
/// events into ``Exchange`` events and performs the ``ExchangeAction`` each returns
/// (``perform(_:)``). Lives on its worker's loop; owned by the ``WorkerContext`` until it closes
/// (a stream's, by its ``HTTP2ServerSession``).
class ExchangeSession: TimerOwner {
    let context: WorkerContext
    /// The app's connection (a socket in production, an in-memory stream in tests) when the
    /// session serves one (a ``ClientSession``); nil for a stream's (an ``HTTP2StreamSession``).
    let appConnection: (any ByteStream)?
    /// The state machine of the app's end: waits for heads and handshakes, refusals, local
    /// answers, interception, drain, the head timer, and the exchange under way (which it holds).
    var connection: ClientConnectionStateMachine
    /// The bytes and handles of the exchange under way; `nil` between requests.
    var current: ExchangeIO?
    /// Where the upstream pool queued this session's request, while it waits for a connection.
    var poolTicket = -1
    var responseReader = HeadReader(limit: HeadLimits.responseHead)
    /// The origin of the intercepted tunnel this session reads requests from (its stream is the
    /// TLS server side, or its HTTP/2 connection runs in one); nil otherwise.
    let intercepted: InterceptedOrigin?
    /// Bytes of the client's output counted against the process's ``BufferBudget`` (what is
    /// queued beyond ``BufferBudget/floor``, as of the last relay or drain).
    var outputCharge = 0
    /// The session serves one stream of an app's HTTP/2 connection (an ``HTTP2StreamSession``):
    /// the access log and the metrics say HTTP/2.
    let isHTTP2Stream: Bool
    /// How loaded the app connection of the stream it serves is (an HTTP/2 stream's session).
    let http2Load: HTTP2ConnectionLoad?
    /// It serves a gRPC call (an HTTP/2 stream with `content-type: application/grpc…`): its
    /// proxy-generated errors are gRPC-shaped (``ErrorResponse/response(for:close:retryAfter:grpc:)``).
    let isGRPCStream: Bool
    /// Runs the keep-alive idle, request-head and handshake timeouts, as ``connection`` says
    /// (an HTTP/2 stream's session has none of these: the same timer as ``exchangeTimer``).
    let headTimer: Timer
    /// Runs the exchange's timer (or the local responder's), as their actions arm and stop it.
    let exchangeTimer: Timer

    /// A session for `appConnection`, or (nil) for a stream, whose connection's `load` it
    /// shares; `grpc` says the stream carries a gRPC call.
    init(appConnection: (any ByteStream)?, context: WorkerContext, intercepted: InterceptedOrigin?, load: HTTP2ConnectionLoad?,
         grpc: Bool) {
        let http2Stream = appConnection == nil
        self.appConnection = appConnection
        self.context = context
        self.intercepted = intercepted
        self.isHTTP2Stream = http2Stream
        self.http2Load = load
        self.isGRPCStream = grpc
        // A plaintext intercepted tunnel has no handshake to wait for.
        self.connection = ClientConnectionStateMachine(intercepted: intercepted, handshaking: appConnection?.isTLS ?? false)
        // `let`s, given their owner once `self` exists (calls through a lazy `var` retained them).
        self.exchangeTimer = context.takeTimer()
        // An HTTP/2 stream's session is given its head and closes after its response: it never
        // waits for a head, so its head timer is never armed (asserted where it would be) and
        // the exchange's serves for both (one allocation fewer per stream; stopping it twice
        // is harmless, it is given back once, and ``timerFired(_:)`` tells it apart as the
        // exchange's).
        self.headTimer = http2Stream ? exchangeTimer : context.takeTimer()
        // (Once for a timer serving both: each unowned store is two atomic operations.)
        exchangeTimer.owner = self
        if !http2Stream { headTimer.owner = self }
    }

    // Its timers serve the worker's next sessions (no one else holds them).
    deinit {
        context.giveBack(timer: exchangeTimer)
        if headTimer !== exchangeTimer { context.giveBack(timer: headTimer) }
    }

    // MARK: - the app's end

    // A connection is called here through `ByteStream`, as it always was; a stream, whose end
    // is its session, through the `stream…` members it overrides. (Each a member of its own kind
    // instead, an HTTP/1.1 request paid a class-method call more for each of a dozen calls.)

    /// What the app sent and the session has not read: request heads and bodies (a stream's:
    /// its body only).
    @inline(__always)
    final var clientInput: EventBuffer { appConnection?.input ?? streamInput }

    /// Where the response goes, as bytes: an HTTP/1.1 head and body, or a stream's body.
    @inline(__always)
    final var clientOutput: EventBuffer { appConnection?.output ?? streamOutput }

    /// Delivers what the app sends (``clientDidRead()``).
    @inline(__always)
    final func startClientReading() {
        if let appConnection { appConnection.startReading() } else { startStreamReading() }
    }

    /// Stops delivering what the app sends: it waits in the kernel, or in the stream's window.
    @inline(__always)
    final func stopClientReading() {
        if let appConnection { appConnection.stopReading() } else { stopStreamReading() }
    }

    /// The inactivity timeouts of the app's end: reading the request, writing the response.
    @inline(__always)
    final func setClientTimeouts(read: Duration?, write: Duration?) {
        if let appConnection { appConnection.setTimeouts(read: read, write: write) } else { setStreamTimeouts(read: read, write: write) }
    }

    /// Closes the app's end at once (a stream: reset, unless its response ended it).
    final func closeClient() {
        if let appConnection { appConnection.close() } else { closeStream() }
    }

    /// Closes the app's end once the response is out, then runs `flushed`.
    final func closeClientAfterFlush(_ flushed: @escaping () -> Void) {
        if let appConnection { appConnection.closeAfterFlush(flushed: flushed) } else { closeStreamAfterFlush(flushed) }
    }

    /// A stream's request body, for ``clientInput`` (an ``HTTP2StreamSession``'s).
    var streamInput: EventBuffer { preconditionFailure("only a stream's session has a stream") }

    /// A stream's response body, for ``clientOutput``.
    var streamOutput: EventBuffer { preconditionFailure("only a stream's session has a stream") }

    /// ``startClientReading()`` for a stream.
    func startStreamReading() {}

    /// ``stopClientReading()`` for a stream.
    func stopStreamReading() {}

    /// ``setClientTimeouts(read:write:)`` for a stream.
    func setStreamTimeouts(read: Duration?, write: Duration?) {}

    /// ``closeClient()`` for a stream.
    func closeStream() {}

    /// ``closeClientAfterFlush(_:)`` for a stream.
    func closeStreamAfterFlush(_ flushed: @escaping () -> Void) { flushed() }

    /// Writes a proxy-generated error response (``ErrorResponse``; gRPC-shaped for a gRPC
    /// call) as the app's end takes it: a connection's as bytes (`close` adds
    /// `Connection: close`), a stream's as fields and a body.
    func writeError(_ error: ProxyError, close: Bool, retryAfter: Int?) {
        clientOutput.append(ErrorResponse.bytes(for: error, close: close, retryAfter: retryAfter, grpc: isGRPCStream))
    }

    /// Passes on an interim (1xx) response, without fields (`100 Continue` for `Expect`), as
    /// the app's end takes it.
    func writeInterim(status: Int, reason: String) {
        clientOutput.append(HeadSerializer.response(version: .http1_1, status: status, reason: reason, fields: HTTPFields()))
    }

    /// A stream's request body ended (its stream said so) since the last call: the relay
    /// completes once the bytes before the end moved. Never for a connection (its bodies
    /// carry their own end).
    func takeRequestBodyEnd() -> Bool { false }

    /// The response's head, for an end that takes heads as fields (a stream's), `committed` or
    /// still staged (its body's first bytes unchecked); nil when the end takes it as bytes.
    func announceResponseHead(_ head: inout UpstreamResponse, committed: Bool) -> Bool { false }

    /// The announced head, staged until now, goes out (its body's first bytes checked).
    func commitResponseHead() {}

    /// The announced head is dropped: the error response written instead is the response.
    func dropResponseHead() {}

    /// A response without a length, relayed unframed to a stream, ended (with `trailers`).
    func endResponse(trailers: HTTPFields?) {}

    /// Whether a response whose app fell behind may start a spool, as far as the app's end
    /// says (a stream's connection may say no).
    var mayStartSpool: Bool { true }

    // MARK: - what only some ends do (a connection's session overrides these)

    /// Reads the next request, if one is buffered: called whenever a request ended and the
    /// end stays open. A stream carries one request: nothing to read.
    func readRequests() {}

    /// A request was answered and the end stays open: the keep-alive idle timeout runs until
    /// the next head starts (a connection's). A stream's end closes after its answer.
    func awaitNextRequest() {}

    /// Leaves the worker's sessions (a connection's). A stream's session was never among them
    /// (its connection is): no lookup for it.
    func leaveContext() {}

    /// Whether the bytes a refused head was read from are an HTTP/2 preface, and the end went
    /// on as HTTP/2 (a connection's).
    func continueAsHTTP2IfPreface() -> Bool { false }

    /// A `CONNECT` request (a connection's: an HTTP/2 app's connection refuses it for its
    /// streams, ``HTTP2ServerSession``).
    func startTunnel(_ head: RequestHead) {
        assertionFailure("only a connection's session is asked for a tunnel")
        refuse(ProxyError(status: 501, type: "http_protocol_error", message: "CONNECT is not served here"), head: head, connect: true)
    }

    /// A request to a local responder (a connection's: the admin listener's).
    func beginLocal(_ head: consuming RequestHead, _ service: LocalService) {
        assertionFailure("only a connection's session answers locally")
        abort()
    }

    /// The upstream agreed to the upgrade the request asked for (a connection's: no HTTP/2
    /// request asks, its `Connection` field being refused).
    func switchProtocols(_ io: ExchangeIO) {
        assertionFailure("only a connection's session is upgraded")
        abort()
    }

    /// A step of the connection's machine that only a connection's session takes (interception,
    /// local answers).
    func connectionOnlyStep(_ action: ClientConnectionStateMachine.Action) -> ClientConnectionStateMachine.Action {
        assertionFailure("only a connection's session takes \(action)")
        return .none
    }

    // MARK: - ending

    /// Drops everything now (loop shutdown, client gone mid-exchange).
    func abort() {
        if let io = current {
            // The exchange ends without a complete answer (client gone, loop shutdown): still
            // counted and logged, with the status sent so far or 499 (client closed).
            account(io, status: io.responseHead?.status ?? 499, error: nil)
            if io.queuedBody != nil { context.pool.cancel(self, key: io.target.poolKey) }
            discardUpstream(io, reset: true)
            current = nil
        }
        connection.closed()
        headTimer.stop()
        exchangeTimer.stop()
        closeClient()
        releaseOutputCharge()
        leaveContext()
    }

    /// Flushes what is queued for the client, then closes.
    func close() {
        connection.closed()
        // Nothing more is read from a closing connection (a lingering close discards it).
        clientInput.drain(clientInput.count)
        headTimer.stop()
        exchangeTimer.stop()
        // The session stays registered until its last bytes are with the kernel, so a drain
        // never stops the process under a response still being written.
        closeClientAfterFlush { [self] in
            releaseOutputCharge()
            leaveContext()
        }
    }

    // MARK: - client events

    /// The app sent bytes (while the session reads).
    @inline(__always)
    func clientDidRead() {
        perform(self.connection.clientReadable()) { $0.clientReadable() }
    }

    /// What was written to the app went out.
    @inline(__always)
    func clientDidDrain() {
        if outputCharge != 0 { chargeOutput() }
        perform(connection.outputDrained()) { $0.clientDrained() }
    }

    /// The app's connection or stream ended (closed, reset, timed out).
    func clientDidEnd(_ reason: ConnectionEnd) {
        // What is left of a response being relayed, when its length says (the exchange may
        // drain a short rest to keep the backend connection).
        let responseLeft = current?.responseRelay.remainingLength
        perform(connection.clientEnded(reason)) {
            reason == .timeout ? $0.clientStalled() : $0.clientEnded(cleanly: reason == .endOfStream, responseLeft: responseLeft)
        }
    }

    // MARK: - performing actions

    /// Performs what the connection decided; `exchangeEvent`: the event as the exchange's, for
    /// when the connection leaves it to the exchange.
    ///
    /// Inlined into each event handler, with the cases of every request first (an event left to
    /// the exchange, the head timer): the rest, out of line, would otherwise make every client
    /// read pay for a large function's prologue.
    @inline(__always)
    func perform(_ action: ClientConnectionStateMachine.Action,
                 otherwise exchangeEvent: (inout Exchange) -> ExchangeAction = { _ in .none }) {
        switch action {
        case .toExchange: perform(connection.exchangeEvent(exchangeEvent))
        case .stopHeadTimer:
            assert(!isHTTP2Stream, "an HTTP/2 stream's head timer is its exchange timer")
            headTimer.suspend()
        case .armHeadTimer(.idle):
            assert(!isHTTP2Stream, "an HTTP/2 stream's head timer is its exchange timer")
            headTimer.schedule(after: context.timeouts.idle)
        default: performConnectionAction(action)
        }
    }

    /// The connection's actions that no request in the common case sets off. A loop, as for the
    /// exchange: a local answer's steps return the action of the event they produced.
    @inline(never)
    private func performConnectionAction(_ first: ClientConnectionStateMachine.Action) {
        var action = first
        while true {
            switch step(action) {
            case .none: return
            case let next: action = next
            }
        }
    }

    /// One connection step: performs `action`, returns the action of the event it produced.
    private func step(_ action: ClientConnectionStateMachine.Action) -> ClientConnectionStateMachine.Action {
        switch action {
        case .none, .toExchange: break
        case .armHeadTimer(let timeout):
            // (Never for an HTTP/2 stream: its head timer is its exchange timer, left alone.)
            guard !isHTTP2Stream else {
                assertionFailure("an HTTP/2 stream's head timer is its exchange timer")
                break
            }
            headTimer.schedule(after: timeout == .idle ? context.timeouts.idle : context.timeouts.clientHeader)
        case .stopHeadTimer:
            guard !isHTTP2Stream else {
                assertionFailure("an HTTP/2 stream's head timer is its exchange timer")
                break
            }
            headTimer.suspend()
        case .close: close()
        case .answer(let error, let keepClient): answer(error, keepClient: keepClient)
        case .rejectHead(let error):
            account(nil, status: error.status, error: error.type)
            answer(error, keepClient: false)
        case .abort(let failure):
            if let failure, let interception = context.interception {
                interception.handshakeFailed(host: failure.origin.host, end: failure.reason, logger: context.logger)
            }
            abort()
        case .pauseClient: stopClientReading()
        case .resumeRequests:
            startClientReading()
            awaitNextRequest()
            readRequests()
        case .peekFirstByte, .continueAsTLS, .continueAsPlaintext, .refuseTLS, .collectLocalBody, .answerLocally, .respondLocally,
             .failLocally:
            return connectionOnlyStep(action)
        }
        return .none
    }

    /// Performs what the exchange decided. Every action but reading heads, pausing and closing
    /// acts on the exchange under way (``current``), looked up once here. (With the connection's
    /// ``perform(_:otherwise:)``, the one place where actions are looked at.)
    func perform(_ action: ExchangeAction) {
        switch action {
        case .none: return
        case .readRequests: readRequests()
        case .pauseClient: stopClientReading()
        case .abort: abort()
        case .close: close()
        default: if let io = current { perform(action, continuing: io) }
        }
    }

    /// Performs `first` and every action the steps it sets off lead to, as a loop: each step
    /// (``step(_:on:)``) does its I/O and returns the action of the exchange event it produced,
    /// instead of performing it itself, so a request's chain (start, token, body, upstream,
    /// send, head, relay, finish) takes no stack. `io` is the exchange under way, used as it is
    /// instead of being looked up (and retained) again for every action; the loop ends with the
    /// exchange, or when an action needs nothing more.
    func perform(_ first: ExchangeAction, continuing io: ExchangeIO) {
        var action = first
        while current === io {
            switch action {
            case .none: return
            case .readRequests, .pauseClient, .abort, .close:
                perform(action)
                return
            default:
                action = step(action, on: io)
            }
        }
        // The exchange ended or gave way to the next one (an answer that kept the connection
        // went on with a pipelined request): what is left is not `io`'s.
        perform(action)
    }

    /// One step of `io`'s exchange: performs `action` and returns the action of the event it
    /// produced (`.none` when it produced none, or waits for one: a token, a connection, bytes).
    private func step(_ action: ExchangeAction, on io: ExchangeIO) -> ExchangeAction {
        switch action {
        case .none, .readRequests, .pauseClient, .abort, .close: return .none  // never here: perform(_:) does these
        case .lookUpToken: return lookUpToken(io)
        case .stageBody(let copy): return stageBody(io, copy: copy)
        case .waitForBody: arm(after: context.timeouts.clientHeader)
        case .holdBody: holdBody(io)
        case .acquireUpstream(let checkStale, let pauseClient): return acquireUpstream(io, checkStale: checkStale, pauseClient: pauseClient)
        case .armQueueTimer:
            arm(after: context.timeouts.connect)
            // A client that stopped reading must not keep this request waiting (the pool may
            // hand over such a connection at once: after the timer, which the send stops).
            context.pool.reclaimStalled(for: io.target)
        case .declineUpstream: declineUpstream(io)
        case .send(let readingBody, let responseTimer):
            // A traced request takes its own copy of the step, out of line: a trace test inside
            // the inlined step cost every untraced request ~35 instructions.
            if !io.propagation.active { return sendRequest(io, readingBody: readingBody, responseTimer: responseTimer, traced: false) }
            return sendTracedRequest(io, readingBody: readingBody, responseTimer: responseTimer)
        case .pumpRequest(let copy): return pumpRequest(io, copy: copy)
        case .resumeRequest(let copy):
            startClientReading()
            return pumpRequest(io, copy: copy)
        case .requestComplete:
            let connected = io.withUpstream { $0.isConnected } == true
            return connection.exchangeEvent { $0.clocks(upstreamConnected: connected) }
        case .setClocks(let readingBody, let responseTimer): setClocks(io, readingBody: readingBody, responseTimer: responseTimer)
        case .readResponseHead: return readResponseHead(io)
        case .forwardInterim(let toClient): return forwardInterim(io, toClient: toClient)
        case .switchProtocols: switchProtocols(io)
        case .pauseUpstream: pauseUpstream(io)
        case .spoolResponse: return startSpooling(io)
        case .releaseUpstream(let disposal):
            dispose(upstreamOf: io, disposal)
            return deliverSpool(io)
        case .deliverSpool: return deliverSpool(io)
        case .holdRejection: return holdRejection(io)
        case .relay(let reportRejection, let keepClient): return startRelay(io, reportRejection: reportRejection, keepClient: keepClient)
        case .pumpResponse: return pumpResponse(io)
        case .resumeResponse: return resumeResponse(io)
        case .endBodyAtClose: return endBodyAtClose(io)
        case .replay(let checkStale, let body): return resend(io, body: body, replayCheckingStale: checkStale)
        case .nonceReplay(let checkStale, let body):
            io.token?.binding?.nonces?.countResourceRetry()
            return resend(io, body: body, replayCheckingStale: checkStale)
        case .retry(let body): return resend(io, body: body, replayCheckingStale: nil)
        case .finish(let upstream, let keepClient): finish(io, upstream: upstream, keepClient: keepClient)
        case .fail(let failure, let close, let retryAfter): fail(io, failure, close: close, retryAfter: retryAfter)
        case .truncate: truncate(io)
        case .drainUpstream(let awaitingHead): drainUpstream(io, awaitingHead: awaitingHead)
        }
        return .none
    }

    // MARK: - timers

    /// Arms the exchange timer (the exchange, or the local responder, knows which it is).
    func arm(after duration: Duration) {
        exchangeTimer.schedule(after: duration)
    }

    /// Stops the exchange timer (a cheap no-op when it is not armed).
    func disarm() {
        exchangeTimer.suspend()
    }

    func timerFired(_ timer: Timer) {
        if timer === exchangeTimer { exchangeTimerFired() } else { headTimerFired() }
    }

    private func headTimerFired() {
        perform(connection.headTimerFired())
    }

    private func exchangeTimerFired() {
        // (An answer that keeps the connection goes on with the pipelined requests: `fail`.)
        perform(connection.timerFired()) { $0.timerFired() }
    }
}
