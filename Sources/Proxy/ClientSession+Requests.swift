import EventLoop
import HTTP1
import TokenManager

/// The request side: heads, routing, tokens, connections, request bodies.
extension ClientSession: UpstreamWaiter {
    func readRequests() {
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
            guard let length else {
                // Part of a head is here: from now on the client has clientHeader to finish it.
                if headWait == .idle {
                    headWait = .head
                    headTimer.schedule(after: context.timeouts.clientHeader)
                }
                return
            }
            headTimer.suspend()
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
        if phase == .idle && client.input.isEmpty && headWait == .head { awaitNextRequest() }
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
        replayed = false
        retried = false
        exchangeGeneration &+= 1
        loggedHead = head
        startedAt = .now
        decision = nil
        token = nil
        requestRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
        responseRelay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: true)
        if head.method == "CONNECT" {
            startTunnel(head)
            return
        }
        if FieldNames.viaMentionsSidecar(head.fields) {
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
        let relay = BodyRelay(framing: head.framing, chunkedOutput: head.framing == .chunked, forwardTrailers: false)
        authorize(PendingRequest(head: head, decision: decision, token: nil, relay: relay, resendBody: nil))
    }

    private func startTunnel(_ head: RequestHead) {
        guard case .authority(let authority) = head.target else {
            respond(with: .badRequest("CONNECT needs an authority-form target (host:port)"), close: true)
            return
        }
        switch context.router.tunnelDecision(for: authority) {
        case .failure(let error):
            respond(with: error, close: true)
        case .success(let destination):
            phase = .tunnel
            headTimer.cancel()
            let tunnel = Tunnel(client: client, host: destination.host, port: destination.port, context: context)
            // Adopt first: a drain must never see a moment with neither the session nor the tunnel.
            context.adoptTunnel(tunnel)
            context.remove(self)
            client.delegate = nil
            tunnel.start()
        }
    }

    /// Adds the credential's token (waiting for one, bounded, if none exists yet), then forwards.
    func authorize(_ request: PendingRequest) {
        guard let credential = request.decision.credential else {
            forward(request)
            return
        }
        if let token = credential.currentToken(), token != self.token || !replayed {
            request.token = token
            forward(request)
            return
        }
        // No usable token yet: wait on this loop for the in-flight fetch. Never forward without it.
        phase = .awaitingToken
        let generation = exchangeGeneration
        let rejected = replayed ? self.token : nil
        var returned = false
        defer { returned = true }
        credential.waitForToken(on: context.loop, timeout: credential.tokenWait) { [self] token in
            guard phase == .awaitingToken, generation == exchangeGeneration else { return }
            guard let token, token != rejected else {
                let bodyless = request.resendBody != nil || request.head.framing == .none || request.head.framing == .contentLength(0)
                respond(with: .tokenUnavailable(credential.name), close: !(bodyless && request.head.keepAlive), retryAfter: 1)
                // Called back later: resume reading pipelined requests. Called back at once: the
                // readRequests loop that called us continues (no recursion per request).
                if returned && phase == .idle { readRequests() }
                return
            }
            request.token = token
            phase = .idle
            forward(request)
        }
    }

    /// Validates what is buffered of the body, then takes a connection and sends the request.
    func forward(_ request: PendingRequest) {
        // Validate (and stage) the body bytes already here before anything goes upstream, so a
        // malformed chunked body sent with its head never reaches the backend.
        let staged = context.scratch.buffer
        let progress: BodyRelay.Progress
        do {
            if let body = request.resendBody {
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
        if progress == .needMore && staged.isEmpty && request.head.framing == .chunked && !request.head.expectsContinue && request.resendBody == nil {
            // Not even the first chunk-size line is complete (reads arrive in pieces): wait for
            // it rather than open a backend request that might have to be aborted.
            pending = request
            phase = .awaitingBody
            // The body must start within clientHeader, like the head did.
            waitTimer.schedule(after: context.timeouts.clientHeader)
            return
        }
        pending = nil
        if phase == .awaitingBody { waitTimer.suspend() }
        self.request = request.head
        self.decision = request.decision
        self.token = request.token
        requestRelay = request.relay
        requestComplete = progress == .complete
        upstreamHead = RequestRewriter.head(for: request.head, decision: request.decision, token: request.token)
        // Keep what is needed to send the request again (401 replay, retry on a fresh connection).
        resendCopy = staged.count <= ClientSession.resendLimit ? (request.resendBody ?? staged.peekBytes(max: staged.count)) : nil
        response = nil
        responseScanner.reset()
        keepClientAlive = false
        let retryable = ClientSession.idempotentMethods.contains(request.head.method) && resendCopy != nil
        switch context.pool.acquire(request.decision.target, waiter: self, checkStale: !retryable) {
        case .ready(let upstream):
            send(on: upstream, body: staged)
            if progress == .blocked { client.stopReading() }
        case .queued:
            // At the connection limit: keep the staged body here while queued.
            let held = OwnedEventBuffer()
            staged.moveAll(to: held.buffer)
            queuedBody = held
            pending = request
            phase = .awaitingConnection
            waitTimer.schedule(after: context.timeouts.connect)
            if progress == .blocked { client.stopReading() }
        case .overloaded:
            // At the limit with a full queue: answer as a queue timeout would, at once.
            staged.drain(staged.count)
            respond(with: .connectionLimitReached(context.maxConnectionsPerUpstream), close: true, retryAfter: 1)
        }
    }

    /// A queued request got its connection.
    func pool(didProvide upstream: UpstreamConnection) {
        guard phase == .awaitingConnection, let held = queuedBody else {
            context.pool.release(upstream)
            return
        }
        waitTimer.suspend()
        pending = nil
        queuedBody = nil
        send(on: upstream, body: held.buffer)
        if !requestComplete { client.startReading(); pumpRequest() }
    }

    /// Writes the head and the staged body to `upstream` and starts the response clock.
    func send(on upstream: UpstreamConnection, body: EventBuffer) {
        upstream.owner = self
        upstream.requestsServed += 1
        upstream.output.append(upstreamHead)
        body.moveAll(to: upstream.output)
        upstream.startReading()
        self.upstream = upstream
        phase = .exchange
        setExchangeTimeouts()
        armResponseTimer()
    }

    /// responseHeaders runs from the moment the whole request is with a connected backend:
    /// connecting is timed by `connect`, a long upload by `bodyIdle`.
    func armResponseTimer() {
        if requestComplete, response == nil, upstream?.isConnected == true {
            waitTimer.schedule(after: context.timeouts.responseHeaders)
        } else {
            waitTimer.suspend()
        }
    }

    /// bodyIdle: no progress reading the request body, or writing either way, for that long ends
    /// the exchange.
    ///
    /// The values rarely change between exchanges, so the (cached) calls usually cost nothing.
    /// The backend's read side uses the longer of bodyIdle and responseHeaders, so it never cuts
    /// a wait for the head that responseHeaders (its own timer) still allows.
    func setExchangeTimeouts() {
        let idle = context.timeouts.bodyIdle
        client.setTimeouts(read: requestComplete ? nil : idle, write: idle)
        upstream?.setTimeouts(read: max(idle, context.timeouts.responseHeaders), write: idle)
    }

    func pumpRequest() {
        guard let upstream, !requestComplete else { return }
        let output = upstream.output
        let before = output.count
        do {
            let progress = try requestRelay.pump(from: client.input, to: output, limit: WorkerContext.highWatermark)
            if resendCopy != nil { keepResendCopy(of: output, from: before) }
            switch progress {
            case .complete:
                requestComplete = true
                setExchangeTimeouts()
                armResponseTimer()
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

    /// Extends the resend copy with the body bytes just queued upstream (nothing has been sent
    /// in between: writes happen when the loop next runs), or gives up past the bound.
    private func keepResendCopy(of output: EventBuffer, from start: Int) {
        guard var copy = resendCopy else { return }
        let added = output.count - start
        guard added > 0 else { return }
        if copy.count + added > ClientSession.resendLimit {
            resendCopy = nil
            return
        }
        copy.append(contentsOf: output.copyBytes(from: start, count: added))
        resendCopy = copy
    }
}

/// Size limits for heads.
enum HeadLimits {
    /// Largest request head accepted (bigger gets 431).
    static let requestHead = 64 * 1024
    /// Largest response head accepted from a backend.
    static let responseHead = 64 * 1024
}
