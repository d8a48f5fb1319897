import EventLoop
import HTTP1
import TokenManager

/// One client connection: reads requests one at a time (pipelined requests wait in the input
/// buffer, so responses go out in order), forwards each to its backend and relays the response.
///
/// Lives on its worker's loop. Owned by the ``WorkerContext`` until it closes; owns the upstream
/// connection it is using for the current exchange. The request side is in
/// `ClientSession+Requests.swift`, the response side in `ClientSession+Responses.swift`.
final class ClientSession: ConnectionDelegate {
    enum Phase {
        /// Reading the next request head (or idle between requests).
        case idle
        /// A routed request waits for its credential's first token (bounded by `tokenWait`).
        case awaitingToken
        /// A chunked request is routed but none of its body is validated yet: the backend is
        /// not contacted until the first chunk-size line parses.
        case awaitingBody
        /// The upstream is at `maxConnectionsPerUpstream`: queued, bounded by `timeouts.connect`.
        case awaitingConnection
        /// A request is being forwarded and its response relayed.
        case exchange
        /// The connection was handed to a CONNECT tunnel.
        case tunnel
        case closed
    }

    /// What the head timer is measuring.
    enum HeadWait { case idle, head }

    /// A routed request not yet sent upstream. A class: it passes through authorize → forward
    /// (and may wait in between), and copying the head at each step cost more than one allocation.
    final class PendingRequest {
        let head: RequestHead
        let decision: RouteDecision
        var token: AccessToken?
        var relay: BodyRelay
        /// The complete (framed) body of a request being sent again (`nil`: read from the client).
        let resendBody: [UInt8]?

        init(head: RequestHead, decision: RouteDecision, token: AccessToken?, relay: BodyRelay, resendBody: [UInt8]?) {
            self.head = head
            self.decision = decision
            self.token = token
            self.relay = relay
            self.resendBody = resendBody
        }
    }

    /// Largest request body kept for sending again (after a 401, or a retry on a fresh
    /// connection); requests with larger bodies are never sent twice.
    static let resendLimit = 64 * 1024

    let client: Connection
    let context: WorkerContext
    var phase = Phase.idle
    var headScanner = HeadScanner()
    var headWait = HeadWait.idle
    private(set) lazy var headTimer = Timer(on: context.loop) { [unowned self] in headTimerFired() }
    private(set) lazy var waitTimer = Timer(on: context.loop) { [unowned self] in waitTimerFired() }
    var pending: PendingRequest?
    /// Body bytes staged while queued for a connection (the worker's scratch buffer is shared).
    var queuedBody: OwnedEventBuffer?

    // The current exchange.
    /// The head of the request being answered, until it is accounted for.
    var loggedHead: RequestHead?
    var startedAt: ContinuousClock.Instant?
    var request: RequestHead?
    var decision: RouteDecision?
    var token: AccessToken?
    var upstreamHead: [UInt8] = []
    /// A copy of the body sent so far, kept while the request may still be sent again.
    var resendCopy: [UInt8]?
    var replayed = false
    var retried = false
    /// Incremented per request, so a late callback for an earlier request is ignored.
    var exchangeGeneration = 0
    var upstream: UpstreamConnection?
    var requestRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
    var requestComplete = false
    var responseScanner = HeadScanner()
    var response: ResponseHead?
    var responseRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: true)
    var keepClientAlive = false
    var clientEnded = false
    /// The backend closed while response bytes were still waiting for a slow client.
    var upstreamEnded = false

    init(client: Connection, context: WorkerContext) {
        self.client = client
        self.context = context
    }

    func start() {
        client.delegate = self
        client.setReadHighWatermark(WorkerContext.readAhead)
        client.startReading()
        awaitNextRequest()
    }

    /// Drops everything now (loop shutdown, client gone mid-request).
    func abort() {
        if loggedHead != nil && phase != .closed {
            // The exchange ends without a complete answer (client gone, or a truncated response):
            // still counted and logged, with the status sent so far or 499 (client closed).
            account(status: response?.status ?? 499, error: nil)
        }
        if phase == .awaitingConnection, let pending { context.pool.cancel(self, key: pending.decision.target.poolKey) }
        phase = .closed
        headTimer.cancel()
        waitTimer.cancel()
        if let upstream { upstream.close() }
        upstream = nil
        client.close()
        context.remove(self)
    }

    /// Flushes what is queued for the client, then closes.
    func close() {
        phase = .closed
        headTimer.cancel()
        waitTimer.cancel()
        // The session stays registered until its last bytes are with the kernel, so a drain
        // never stops the process under a response still being written.
        client.closeAfterFlush { [self] in context.remove(self) }
    }

    // MARK: - client events

    func connectionDidRead(_ connection: Connection) {
        switch phase {
        case .idle: readRequests()
        case .awaitingBody: if let pending { forward(pending) }
        case .exchange: if !requestComplete { pumpRequest() }
        case .awaitingToken, .awaitingConnection, .tunnel, .closed: break
        }
    }

    func connectionDidDrain(_ connection: Connection) {
        // The client caught up with the response: resume reading the backend.
        guard phase == .exchange, let upstream, response != nil else { return }
        upstream.startReading()
        pumpResponse()
    }

    func connection(_ connection: Connection, didEnd reason: ConnectionEnd) {
        switch phase {
        case .exchange where reason == .endOfStream && requestComplete,
             .awaitingToken where reason == .endOfStream,
             .awaitingConnection where reason == .endOfStream && requestComplete:
            // A half-close after a complete request: finish the response, then close.
            clientEnded = true
        case .closed, .tunnel:
            break
        default:
            // The client went away (or stalled past bodyIdle) mid-request: abort upstream too.
            abort()
        }
    }

    // MARK: - timers

    /// While draining, a connection between requests is closed (busy ones finish first).
    func drainIfIdle() {
        if phase == .idle && client.input.isEmpty { close() }
    }

    /// Between requests: the keep-alive idle timeout runs until the next head starts.
    func awaitNextRequest() {
        if (context.draining || clientEnded) && client.input.isEmpty {
            close()
            return
        }
        headWait = .idle
        headTimer.schedule(after: context.timeouts.idle)
    }

    private func headTimerFired() {
        guard phase == .idle else { return }
        switch headWait {
        case .idle:
            close()
        case .head:
            respond(with: ProxyError(status: 408, type: "http_request_error",
                                     message: "the request head did not arrive completely within timeouts.clientHeader"),
                    close: true)
        }
    }

    private func waitTimerFired() {
        switch phase {
        case .awaitingBody:
            pending = nil
            respond(with: ProxyError(status: 408, type: "http_request_error",
                                     message: "the request body did not start within timeouts.clientHeader"),
                    close: true)
        case .awaitingConnection:
            guard let pending else { return }
            context.pool.cancel(self, key: pending.decision.target.poolKey)
            queuedBody = nil
            self.pending = nil
            respond(with: .connectionLimitReached(context.maxConnectionsPerUpstream), close: true, retryAfter: 1)
        case .exchange where response == nil:
            // No response head within timeouts.responseHeaders.
            respond(with: ProxyError(status: 504, type: "http_response_timeout",
                                     message: "the backend did not send a response head within timeouts.responseHeaders"),
                    close: !requestComplete || !(request?.keepAlive ?? false))
            if phase == .idle { readRequests() }
        default:
            break
        }
    }
}
