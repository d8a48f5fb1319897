import EventLoop
import HTTP1
import TokenManager

/// One client connection: reads requests one at a time (pipelined requests wait in the input
/// buffer, so responses go out in order), forwards each to its backend and relays the response.
///
/// Lives on its worker's loop. Owned by the ``WorkerContext`` until it closes; owns the upstream
/// connection it is using for the current exchange.
final class ClientSession: ConnectionDelegate, UpstreamConnectionOwner {
    private enum Phase {
        /// Reading the next request head.
        case idle
        /// A routed request waits for its credential's first token (bounded by `tokenWait`).
        case awaitingToken
        /// A chunked request is routed but none of its body is validated yet: the backend is
        /// not contacted until the first chunk-size line parses (see ``forward(_:)``).
        case awaitingBody
        /// A request is being forwarded and its response relayed.
        case exchange
        case closed
    }

    /// A routed request not yet sent upstream.
    private struct PendingRequest {
        let head: RequestHead
        let decision: RouteDecision
        var token: AccessToken?
        var relay: BodyRelay
        /// The complete body of a request being replayed after a 401 (`nil`: read from the client).
        var replayBody: [UInt8]?
    }

    /// Largest request body kept for a replay after a 401 (larger ones get the 401 as is).
    static let replayLimit = 64 * 1024

    private let client: Connection
    private let context: WorkerContext
    private var phase = Phase.idle
    private var headScanner = HeadScanner()
    private var pending: PendingRequest?

    // The current exchange.
    private var request: RequestHead?
    private var decision: RouteDecision?
    private var token: AccessToken?
    /// A copy of the body sent so far, kept while it may still be replayed after a 401.
    private var replayCopy: [UInt8]?
    private var replayed = false
    /// Incremented per request, so a late token callback for an earlier request is ignored.
    private var exchangeGeneration = 0
    private var upstream: UpstreamConnection?
    private var requestRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
    private var requestComplete = false
    private var responseScanner = HeadScanner()
    private var response: ResponseHead?
    private var responseRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: true)
    private var keepClientAlive = false
    private var clientEnded = false

    init(client: Connection, context: WorkerContext) {
        self.client = client
        self.context = context
    }

    func start() {
        client.delegate = self
        client.setReadHighWatermark(WorkerContext.readAhead)
        client.startReading()
    }

    /// Drops everything now (loop shutdown, client gone mid-request).
    func abort() {
        phase = .closed
        if let upstream { upstream.close() }
        upstream = nil
        client.close()
        context.remove(self)
    }

    // MARK: - client events

    func connectionDidRead(_ connection: Connection) {
        switch phase {
        case .idle: readRequests()
        case .awaitingBody: if let pending { forward(pending) }
        case .awaitingToken: break
        case .exchange: if !requestComplete { pumpRequest() }
        case .closed: break
        }
    }

    func connectionDidDrain(_ connection: Connection) {
        // The client caught up with the response: resume reading the backend.
        guard phase == .exchange, let upstream, response != nil else { return }
        upstream.connection.startReading()
        pumpResponse()
    }

    func connection(_ connection: Connection, didEnd reason: ConnectionEnd) {
        switch phase {
        case .idle, .awaitingBody, .awaitingToken:
            abort()
        case .exchange:
            if reason == .endOfStream && requestComplete {
                // A half-close after a complete request: finish the response, then close.
                clientEnded = true
                return
            }
            // The client went away mid-request: abort the upstream request too.
            abort()
        case .closed:
            break
        }
    }

    // MARK: - requests

    private func readRequests() {
        while phase == .idle && !client.input.isEmpty {
            let length: Int?
            do {
                length = try client.input.withContiguousPrefix(HeadLimits.requestHead + 4) { bytes in
                    try headScanner.scan(bytes)
                }
            } catch {
                reject(error)
                return
            }
            guard let length else { return }
            let head: RequestHead
            do {
                head = try client.input.withContiguousPrefix(length) { try RequestHeadParser.parse($0) }
            } catch {
                reject(error)
                return
            }
            client.input.drain(length)
            headScanner.reset()
            begin(head)
        }
    }

    private func reject(_ error: any Error) {
        let parseError = error as? HTTPParseError ?? .invalid("malformed request")
        let proxyError: ProxyError
        switch parseError {
        case .headTooLarge: proxyError = .headTooLarge("the request head is larger than 64 KiB")
        case .tooManyFields: proxyError = .headTooLarge("the request has more than 100 header fields")
        case .invalid(let message): proxyError = .badRequest("malformed request: \(message)")
        }
        respond(with: proxyError, close: true)
    }

    private func begin(_ head: RequestHead) {
        let bodyless = head.framing == .none || head.framing == .contentLength(0)
        let canContinue = bodyless && head.keepAlive
        if head.method == "CONNECT" {
            respond(with: .connectNotAllowed(), close: true)
            return
        }
        if head.fields.values("via").contains(where: { $0.contains("token-sidecar") }) {
            respond(with: ProxyError(status: 508, type: "proxy_loop_detected",
                                     message: "the request already passed through token-sidecar"), close: !canContinue)
            return
        }
        let decision: RouteDecision
        switch context.router.decide(head) {
        case .success(let routed): decision = routed
        case .failure(let error):
            respond(with: error, close: !canContinue)
            return
        }
        replayed = false
        exchangeGeneration &+= 1
        let relay = BodyRelay(framing: head.framing, chunkedOutput: head.framing == .chunked, forwardTrailers: false)
        authorize(PendingRequest(head: head, decision: decision, token: nil, relay: relay, replayBody: nil))
    }

    /// Adds the credential's token (waiting for one, bounded, if none exists yet), then forwards.
    private func authorize(_ request: PendingRequest) {
        guard let credential = request.decision.credential else {
            forward(request)
            return
        }
        if let token = credential.currentToken() {
            var request = request
            request.token = token
            forward(request)
            return
        }
        // No usable token yet: wait on this loop for the in-flight fetch. Never forward without it.
        phase = .awaitingToken
        let generation = exchangeGeneration
        credential.waitForToken(on: context.loop, timeout: credential.tokenWait) { [self] token in
            guard phase == .awaitingToken, generation == exchangeGeneration else { return }
            guard let token else {
                let bodyless = request.replayBody != nil || request.head.framing == .none || request.head.framing == .contentLength(0)
                respond(with: .tokenUnavailable(credential.name), close: !(bodyless && request.head.keepAlive), retryAfter: 1)
                if phase == .idle { readRequests() }
                return
            }
            var request = request
            request.token = token
            phase = .idle
            forward(request)
        }
    }

    /// Sends a routed request upstream — once what is buffered of its body has been validated.
    private func forward(_ request: PendingRequest) {
        var request = request
        // Validate (and stage) the body bytes already here before anything goes upstream, so a
        // malformed chunked body sent with its head never reaches the backend.
        let staged = context.scratch.buffer
        let progress: BodyRelay.Progress
        do {
            if let body = request.replayBody {
                staged.append(body)
                progress = .complete
            } else {
                progress = try request.relay.pump(from: client.input, to: staged, limit: WorkerContext.highWatermark)
            }
        } catch {
            staged.drain(staged.count)
            pending = nil
            respond(with: .badRequest("malformed chunked request body"), close: true)
            return
        }
        if progress == .needMore && staged.isEmpty && request.head.framing == .chunked && !request.head.expectsContinue && request.replayBody == nil {
            // Not even the first chunk-size line is complete (reads arrive in pieces): wait for
            // it rather than open a backend request that might have to be aborted.
            pending = request
            phase = .awaitingBody
            return
        }
        pending = nil
        let head = request.head, decision = request.decision
        let headBytes = RequestRewriter.head(for: head, decision: decision, token: request.token)
        guard let upstream = context.pool.acquire(key: decision.poolKey, host: decision.upstreamHost,
                                                  port: decision.upstreamPort, on: context.loop) else {
            staged.drain(staged.count)
            respond(with: ProxyError(status: 502, type: "proxy_internal_error", message: "could not create a connection"), close: true)
            return
        }
        upstream.owner = self
        upstream.requestsServed += 1
        upstream.connection.setReadHighWatermark(WorkerContext.readAhead)
        upstream.connection.write(headBytes)
        // Keep what may be needed to replay the request once after a 401 from the backend.
        let replayable = decision.credential?.refreshable == true && !replayed
        replayCopy = nil
        if replayable && staged.count <= Self.replayLimit {
            replayCopy = request.replayBody ?? staged.peekBytes(max: staged.count)
        }
        staged.moveAll(to: upstream.connection.output)
        upstream.connection.startReading()

        self.upstream = upstream
        self.request = head
        self.decision = decision
        self.token = request.token
        requestRelay = request.relay
        requestComplete = progress == .complete
        response = nil
        responseScanner.reset()
        keepClientAlive = false
        phase = .exchange
        if progress == .blocked { client.stopReading() }
    }

    private func pumpRequest() {
        guard let upstream, !requestComplete else { return }
        let output = upstream.connection.output
        let before = output.count
        do {
            let progress = try requestRelay.pump(from: client.input, to: output, limit: WorkerContext.highWatermark)
            if replayCopy != nil { keepReplayCopy(of: output, from: before) }
            switch progress {
            case .complete: requestComplete = true
            case .blocked: client.stopReading()
            case .needMore: break
            }
        } catch {
            // Part of the request is already upstream: abort it there so it is never processed
            // as complete, and tell the client (unless the response is already under way).
            if response == nil {
                respond(with: .badRequest("malformed chunked request body"), close: true)
            } else {
                abort()
            }
        }
    }

    /// Extends the replay copy with the body bytes just queued upstream (nothing has been sent
    /// in between: writes happen when the loop next runs), or gives up past the bound.
    private func keepReplayCopy(of output: EventBuffer, from start: Int) {
        guard var copy = replayCopy else { return }
        let added = output.count - start
        guard added > 0 else { return }
        if copy.count + added > Self.replayLimit {
            replayCopy = nil
            return
        }
        copy.append(contentsOf: output.peekBytes(max: output.count).suffix(added))
        replayCopy = copy
    }

    // MARK: - upstream events

    func upstreamDidConnect(_ upstream: UpstreamConnection) {}

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        // The backend caught up with the request body: resume reading the client.
        guard phase == .exchange, !requestComplete else { return }
        client.startReading()
        pumpRequest()
    }

    func upstreamDidRead(_ upstream: UpstreamConnection) {
        guard phase == .exchange else { return }
        if response == nil { readResponseHead() }
        if response != nil { pumpResponse() }
    }

    func upstream(_ upstream: UpstreamConnection, didEnd reason: ConnectionEnd) {
        guard phase == .exchange, upstream === self.upstream else { return }
        // Bytes that arrived with the close are still buffered: consume them first.
        if response == nil { readResponseHead() }
        guard phase == .exchange else { return }
        if response != nil {
            pumpResponse()
            guard phase == .exchange else { return }
            if responseRelay.endsAtClose && responseRelay.finishAtClose(to: client.output) {
                finishExchange(upstreamReusable: false)
            } else {
                // The backend failed mid-response: close without completing the message so the
                // client sees a truncated transfer, never a clean short response.
                context.logger.info("upstream closed mid-response", metadata: ["reason": "\(reason)"])
                abort()
            }
            return
        }
        let error = ProxyError.upstreamFailure(reason, connected: upstream.connection.isConnected,
                                               partial: !upstream.connection.input.isEmpty)
        respond(with: error, close: true)
    }

    private func readResponseHead() {
        guard let upstream, let request else { return }
        let input = upstream.connection.input
        while response == nil && !input.isEmpty {
            let head: ResponseHead
            do {
                guard let length = try input.withContiguousPrefix(HeadLimits.responseHead + 4, { try responseScanner.scan($0) }) else { return }
                head = try input.withContiguousPrefix(length) {
                    try ResponseHeadParser.parse($0, requestMethod: request.method)
                }
                input.drain(length)
                responseScanner.reset()
            } catch {
                respond(with: .upstreamProtocol("the backend sent a malformed response"), close: true)
                return
            }
            if head.status < 200 {
                if head.status == 101 {
                    respond(with: .upstreamProtocol("the backend switched protocols, which was not requested"), close: true)
                    return
                }
                // Interim responses (100 Continue for `Expect`) go to HTTP/1.1 clients as they are.
                if request.version == .http1_1 {
                    client.write(HeadSerializer.response(version: .http1_1, status: head.status, reason: head.reason, fields: HTTPFields()))
                }
                continue
            }
            if head.status == 401, replayAfterRejection() { return }
            let framing = ResponseRewriter.clientFraming(head.framing, clientVersion: request.version)
            keepClientAlive = request.keepAlive && framing != .close && !clientEnded
            client.write(ResponseRewriter.head(for: head, framing: framing, clientVersion: request.version, keepAlive: keepClientAlive))
            responseRelay = BodyRelay(framing: head.framing, chunkedOutput: framing == .chunked, forwardTrailers: true)
            response = head
        }
    }

    /// The backend answered 401 to a request that carried our token: invalidate that token
    /// (compare-and-invalidate in the credential: many 401s, one refetch) and, when the request
    /// can be sent again (complete, body within the replay bound, not replayed yet), replay it
    /// once with the next token instead of passing the 401 on. Returns whether it replays.
    private func replayAfterRejection() -> Bool {
        guard let decision, let credential = decision.credential, let token, let request else { return false }
        credential.invalidate(token)
        guard credential.refreshable, !replayed, requestComplete, let body = replayCopy else { return false }
        replayed = true
        // The 401's body is not read: this upstream connection cannot be reused.
        upstream?.close()
        upstream = nil
        response = nil
        replayCopy = nil
        let relay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
        phase = .idle
        authorize(PendingRequest(head: request, decision: decision, token: nil, relay: relay, replayBody: body))
        return true
    }

    private func pumpResponse() {
        guard let upstream, let response else { return }
        do {
            switch try responseRelay.pump(from: upstream.connection.input, to: client.output, limit: WorkerContext.highWatermark) {
            case .complete: finishExchange(upstreamReusable: response.keepAlive && requestComplete)
            case .blocked: upstream.connection.stopReading()
            case .needMore: break
            }
        } catch {
            context.logger.info("malformed response body from upstream")
            abort()
        }
    }

    // MARK: - ending an exchange

    private func finishExchange(upstreamReusable: Bool) {
        if let upstream {
            upstream.owner = nil
            if upstreamReusable && upstream.connection.isOpen {
                context.pool.release(upstream)
            } else {
                upstream.close()
            }
        }
        upstream = nil
        let keep = keepClientAlive && requestComplete && !clientEnded
        resetExchange()
        if !keep {
            close()
            return
        }
        client.startReading()
        readRequests()
    }

    private func resetExchange() {
        request = nil
        response = nil
        requestComplete = false
        keepClientAlive = false
        phase = .idle
    }

    /// Answers the current request with a proxy-generated error.
    private func respond(with error: ProxyError, close: Bool, retryAfter: Int? = nil) {
        if let upstream {
            upstream.close()
            self.upstream = nil
        }
        context.logger.debug("proxy error response", metadata: ["status": "\(error.status)", "type": "\(error.type)"])
        client.write(ErrorResponse.bytes(for: error, close: close, retryAfter: retryAfter))
        resetExchange()
        if close { self.close() }
    }

    /// Flushes what is queued for the client, then closes.
    private func close() {
        phase = .closed
        client.closeAfterFlush()
        context.remove(self)
    }
}

/// Size limits for heads.
enum HeadLimits {
    /// Largest request head accepted (bigger gets 431).
    static let requestHead = 64 * 1024
    /// Largest response head accepted from a backend.
    static let responseHead = 64 * 1024
}
