import EventLoop
import HTTP1
import TokenManager

/// The response side: response heads and bodies, retries, 401 replays, ending exchanges.
extension ClientSession: UpstreamConnectionOwner {
    func upstreamDidConnect(_ upstream: UpstreamConnection) {
        setExchangeTimeouts()
        armResponseTimer()
    }

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

    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) {
        guard phase == .exchange, upstream === self.upstream else { return }
        // Bytes that arrived with the close are still buffered: consume them first.
        if response == nil { readResponseHead() }
        guard phase == .exchange else { return }
        if response != nil {
            upstreamEnded = true
            pumpResponse()
            return
        }
        let partial = !(upstream.input?.isEmpty ?? true)
        if !partial, retry(after: reason, on: upstream) { return }
        let error: ProxyError
        switch reason {
        case .prohibitedDestination:
            error = ProxyError(status: 403, type: "destination_ip_prohibited",
                               message: "the destination resolves to a link-local or metadata address; name it as a route's upstream to allow it")
        case .connectTimeout:
            error = ProxyError(status: 504, type: "connection_timeout",
                               message: "could not connect to the backend within timeouts.connect")
        case .connection(let end):
            error = .upstreamFailure(end, connected: upstream.isConnected, partial: partial)
        }
        respond(with: error, close: !requestComplete || !(request?.keepAlive ?? false))
        if phase == .idle { readRequests() }
    }

    /// Sends the request once more on a fresh connection when that cannot duplicate it: no byte
    /// of a response arrived, the request can be reproduced (its body was kept), and either a
    /// pooled connection turned out to be closed (idempotent methods, or nothing was written),
    /// or a new connection failed before any request byte was sent.
    private func retry(after reason: UpstreamEnd, on upstream: UpstreamConnection) -> Bool {
        guard !retried, requestComplete, let body = resendCopy, let request, let decision else { return false }
        let reused = upstream.requestsServed > 1
        let eligible: Bool
        switch reason {
        case .connection(.endOfStream), .connection(.socketError):
            if reused {
                let unsent = upstream.unsentCount >= upstreamHead.count + body.count
                eligible = Self.idempotentMethods.contains(request.method) || unsent
            } else {
                eligible = !upstream.isConnected
            }
        case .connection(.refused):
            eligible = true
        default:
            eligible = false
        }
        guard eligible else { return false }
        retried = true
        upstream.owner = nil
        upstream.close()
        self.upstream = nil
        let fresh = context.pool.acquireFresh(decision.target)
        let staged = context.scratch.buffer
        staged.append(body)
        send(on: fresh, body: staged)
        return true
    }

    /// RFC 9110 §9.2.2: methods whose repetition has the same effect as one request.
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]

    private func readResponseHead() {
        guard let upstream, let request, let input = upstream.input else { return }
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
                waitTimer.schedule(after: context.timeouts.responseHeaders)
                continue
            }
            if head.status == 401, replayAfterRejection() { return }
            waitTimer.suspend()
            let framing = ResponseRewriter.clientFraming(head.framing, clientVersion: request.version)
            if framing == .close && !ResponseRewriter.otherTransferCodings(head).isEmpty {
                // An HTTP/1.0 client cannot be told about a transfer coding such as gzip.
                respond(with: .upstreamProtocol("the backend used a transfer coding an HTTP/1.0 client cannot receive"), close: true)
                return
            }
            keepClientAlive = request.keepAlive && framing != .close && !clientEnded && !context.draining
            client.write(ResponseRewriter.head(for: head, framing: framing, clientVersion: request.version, keepAlive: keepClientAlive))
            responseRelay = BodyRelay(framing: head.framing, chunkedOutput: framing == .chunked, forwardTrailers: true)
            response = head
            setExchangeTimeouts()
        }
    }

    /// The backend answered 401 to a request that carried our token: invalidate that token
    /// (compare-and-invalidate in the credential: many 401s, one refetch) and, when the request
    /// can be sent again (complete, body kept, not replayed yet), replay it once with the next
    /// token instead of passing the 401 on. Returns whether it replays.
    private func replayAfterRejection() -> Bool {
        guard let decision, let credential = decision.credential, let token, let request else { return false }
        credential.invalidate(token)
        guard credential.refreshable, !replayed, requestComplete, let body = resendCopy else { return false }
        replayed = true
        // The 401's body is not read: this upstream connection cannot be reused.
        upstream?.close()
        upstream = nil
        response = nil
        waitTimer.suspend()
        let relay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
        phase = .idle
        authorize(PendingRequest(head: request, decision: decision, token: nil, relay: relay, resendBody: body))
        return true
    }

    func pumpResponse() {
        guard let upstream, let response, let input = upstream.input else { return }
        do {
            switch try responseRelay.pump(from: input, to: client.output, limit: WorkerContext.highWatermark) {
            case .complete: finishExchange(upstreamReusable: response.keepAlive && requestComplete && !upstreamEnded)
            case .blocked: upstream.stopReading()
            case .needMore: if upstreamEnded { upstreamEndedDuringBody() }
            }
        } catch {
            account(status: response.status, error: "http_protocol_error")
            abort()
        }
    }

    /// The backend closed and everything it sent has been relayed (a slow client may have made
    /// that take a while): a close-delimited body ends here; any other body was cut short.
    private func upstreamEndedDuringBody() {
        if responseRelay.endsAtClose && responseRelay.finishAtClose(to: client.output) {
            finishExchange(upstreamReusable: false)
        } else {
            // Close without completing the message so the client sees a truncated transfer,
            // never a clean short response.
            account(status: response?.status ?? 502, error: "http_response_incomplete")
            abort()
        }
    }

    // MARK: - ending an exchange

    private func finishExchange(upstreamReusable: Bool) {
        waitTimer.suspend()
        account(status: response?.status ?? 0, error: nil)
        if let upstream {
            upstream.owner = nil
            if upstreamReusable && !upstream.isClosed {
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
        client.setTimeouts(read: nil, write: context.timeouts.bodyIdle)
        client.startReading()
        awaitNextRequest()
        readRequests()
    }

    private func resetExchange() {
        upstreamEnded = false
        request = nil
        response = nil
        decision = nil
        resendCopy = nil
        requestComplete = false
        keepClientAlive = false
        phase = .idle
    }

    /// Answers the current request with a proxy-generated error.
    func respond(with error: ProxyError, close: Bool, retryAfter: Int? = nil) {
        waitTimer.suspend()
        if let upstream {
            upstream.close()
            self.upstream = nil
        }
        account(status: error.status, error: error.type)
        client.write(ErrorResponse.bytes(for: error, close: close, retryAfter: retryAfter))
        resetExchange()
        if close || clientEnded {
            self.close()
        } else {
            client.setTimeouts(read: nil, write: context.timeouts.bodyIdle)
            awaitNextRequest()
        }
    }
}
