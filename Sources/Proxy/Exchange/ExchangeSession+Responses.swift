import EventLoop
import HTTP1
import HTTPMessage
import TokenManager

/// The response side: response heads and bodies, 401 replays, ending exchanges.
extension ExchangeSession: UpstreamConnectionOwner {
    func upstreamDidConnect(_ upstream: UpstreamConnection) {
        guard let io = current else { return }
        perform(connection.exchangeEvent { $0.clocks(upstreamConnected: upstream.isConnected) }, continuing: io)
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        perform(connection.exchangeEvent { $0.upstreamDrained() })
    }

    func upstreamDidRead(_ upstream: UpstreamConnection) {
        perform(connection.exchangeEvent { $0.upstreamReadable() })
    }

    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) {
        guard let io = current, upstream === io.upstream else { return }
        // Bytes that arrived with the close are still buffered: consume them first.
        perform(connection.exchangeEvent { $0.upstreamEnding() }, continuing: io)
        guard current === io, io.upstream === upstream else { return }
        // While forwarding, what is left unread is part of a head (a relayed body is left to
        // the pump, and only a forwarding exchange looks at this).
        let facts = Exchange.UpstreamEndFacts(
            reason: reason, partialHead: !(upstream.input?.isEmpty ?? true), connected: upstream.isConnected, reused: upstream.requestsServed > 1,
            nothingSent: upstream.unsentCount >= io.requestQueued)
        perform(connection.exchangeEvent { $0.upstreamEnded(facts) })
    }

    /// Reads the next response head, if a whole one is buffered: an interim one is passed on
    /// as the exchange says (whose ``forwardInterim(_:toClient:)`` then reads the next one), the
    /// final one hands the exchange the facts it decides on.
    func readResponseHead(_ io: ExchangeIO) -> ExchangeAction {
        // An HTTP/2 upstream's stream hands its heads over typed.
        if let stream = io.withUpstream({ $0.http2Stream }) ?? nil { return readResponseHead(io, from: stream) }
        // (`input` is the socket's buffer, alive while the exchange holds its upstream: nothing
        // here gives the upstream up before the last use of `input`.)
        guard let input = io.withUpstream({ $0.input }) ?? nil, !input.isEmpty else { return .none }
        do {
            // The head is read as offsets over the buffered bytes and the forwarded lines copied
            // out before the bytes are drained: no String per field.
            enum Parsed { case interim(status: Int, reason: String, switching: [UInt8]?), final(UpstreamResponse) }
            let parsed: Parsed
            do {
                let read = try responseReader.read(from: input, prefix: { bytes throws(HTTPParseError) -> (head: Parsed, length: Int) in
                    let view = try ResponseHeadParser.viewPrefix(bytes, requestMethod: io.head.method,
                                                                 reusing: context.takeFieldLines())
                    defer { context.fieldLines = view.fieldLines }
                    if view.status < 200 {
                        // A 101 switches to the protocol asked for, or is refused (never a tunnel).
                        let asked = view.status == 101 && io.upgrade != nil
                            && view.section.firstUpgradeProtocol()?.name == io.upgrade?.name
                        let switching = asked ? ResponseRewriter.switchingProtocols(view) : nil
                        return (.interim(status: view.status, reason: String(decoding: view.reason, as: UTF8.self),
                                         switching: switching), view.bytes.count)
                    }
                    // (An HTTP/2 stream's head goes to its codec later: built in storage of its own.)
                    var response = ResponseRewriter.response(view, clientVersion: io.head.version,
                                                             reusing: isHTTP2Stream ? context.takeStreamHeadBytes() : context.takeHeadBytes())
                    if isHTTP2Stream {
                        ResponseRewriter.locateKeptLines(of: view, in: &response, reusing: context.takeStreamHeadLines())
                    }
                    if isGRPCStream { response.grpcUnauthenticated = ResponseRewriter.isGRPCUnauthenticated(view) }
                    if let nonces = io.token?.binding?.nonces {
                        response.nonceChallenge = ResponseRewriter.readDPoP(view, nonces: nonces,
                                                                            origin: RequestRewriter.upstreamOrigin(io.decision))
                    }
                    return (.final(response), view.bytes.count)
                })
                guard let read else {
                    // A head longer than a busy stream's first read-ahead: the rest of it may come.
                    if isHTTP2Stream && input.count >= BufferBudget.floor {
                        io.withUpstream { $0.startReading(readAhead: WorkerContext.readAhead) }
                    }
                    return .none
                }
                parsed = read
            } catch {
                return connection.exchangeEvent { $0.responseMalformed("the backend sent a malformed response", responseBytesSent: false) }
            }
            // Consumed, and the head moved into the exchange: a copy left here would share the
            // forwarded lines' storage while ``startRelay`` completes them in place.
            switch consume parsed {
            case .interim(let status, let reason, let switching):
                io.switchingHead = switching
                io.interimHead = (status, reason)
                return connection.exchangeEvent { $0.interimResponse(status: status, switchesAsAsked: switching != nil) }
            case .final(let head):
                return responseHeadRead(io, head, fromStream: false)
            }
        }
    }

    /// The exchange takes the final response head read (`fromStream`: an HTTP/2 upstream's).
    /// Inlined: a call passing the head cost every HTTP/1.1 response ~100 instructions.
    @inline(__always)
    private func responseHeadRead(_ io: ExchangeIO, _ head: consuming UpstreamResponse, fromStream: Bool) -> ExchangeAction {
        let facts = Exchange.ResponseHeadFacts(
            status: head.status, upstreamKeepAlive: head.keepAlive, endsAtClose: head.framing == .untilClose,
            clientFramedByClose: head.clientFraming == .close, otherCodings: !head.otherCodings.isEmpty,
            draining: context.draining, nonceChallenge: head.nonceChallenge,
            grpcUnauthenticated: head.grpcUnauthenticated, upstreamIsStream: fromStream)
        io.responseBodiless = head.framing == .none
        io.responseHead = consume head
        return connection.exchangeEvent { $0.responseHead(facts) }
    }

    /// ``readResponseHead(_:)`` for an HTTP/2 upstream's stream: the next head it received,
    /// checked (``ResponseRewriter/status(ofHTTP2:)``) and kept as an HTTP/1.1 one is, from its
    /// fields (no text written and parsed back).
    private func readResponseHead(_ io: ExchangeIO, from stream: HTTP2UpstreamLease) -> ExchangeAction {
        stream.withNextResponseHead { received, endStream in
            let response: UpstreamResponse
            do throws(ResponseRewriter.HTTP2HeadProblem) {
                let status = try ResponseRewriter.status(ofHTTP2: received)
                if status < 200 {
                    io.switchingHead = nil
                    io.interimHead = (status, HeadSerializer.reasonPhrase(status))
                    return connection.exchangeEvent { $0.interimResponse(status: status, switchesAsAsked: false) }
                }
                // (An HTTP/2 app's stream's head goes to its codec as fields: the kept lines are
                // located, in storage of its own.)
                var head = try ResponseRewriter.response(
                    http2: received, status: status, endStream: endStream, requestMethod: io.head.method,
                    clientVersion: io.head.version, locateLines: isHTTP2Stream,
                    reusing: isHTTP2Stream ? context.takeStreamHeadBytes() : context.takeHeadBytes(),
                    lines: isHTTP2Stream ? context.takeStreamHeadLines() : [])
                if isGRPCStream {
                    head.grpcUnauthenticated = ResponseRewriter.isGRPCUnauthenticated(http2: received, status: status,
                                                                                      endStream: endStream)
                }
                if let nonces = io.token?.binding?.nonces {
                    head.nonceChallenge = ResponseRewriter.readDPoP(http2: received, status: status, nonces: nonces,
                                                                    origin: RequestRewriter.upstreamOrigin(io.decision))
                }
                response = head
            } catch {
                return connection.exchangeEvent { $0.responseMalformed("the backend sent a malformed response", responseBytesSent: false) }
            }
            return responseHeadRead(io, response, fromStream: true)
        } ?? .none
    }


    /// An interim response arrived: to an HTTP/1.1 client it goes on as it is (`100 Continue`
    /// for `Expect`); the response-head clock starts again, and the next head (often the
    /// final one, in the same read) is read.
    func forwardInterim(_ io: ExchangeIO, toClient: Bool) -> ExchangeAction {
        if toClient, let interim = io.interimHead {
            writeInterim(status: interim.status, reason: interim.reason)
        }
        io.interimHead = nil
        arm(after: context.timeouts.responseHeaders)
        return readResponseHead(io)
    }

    /// A 401 answered our token: park it unread and ask the credential for a different token.
    /// A new token replays the request; none (same token, rate limit, timeout) relays the 401.
    func holdRejection(_ io: ExchangeIO) -> ExchangeAction {
        disarm()  // the head arrived
        guard let credential = io.decision.credential, let token = io.token else {
            return connection.exchangeEvent { $0.rejectionResolved(newToken: false) }
        }
        context.metrics.upstreamUnauthorized[credential.name, default: 0] += 1
        io.upstream?.stopReading()
        if let trace = io.trace { trace.rejected(io) }
        credential.rejected(token, on: context.loop, timeout: credential.tokenWait) { [self] replacement in
            // While this exchange is current it holds the rejection: a new token is the replay's
            // (on a sigv4 route, only one with keys to sign it with).
            guard current === io else { return }
            let newToken = signable(replacement, io)
            io.trace?.tokenWaitEnded(newToken)
            if let newToken { io.token = newToken }
            perform(connection.exchangeEvent { $0.rejectionResolved(newToken: newToken != nil) })
        }
        return .none
    }

    /// Writes the response head to the client and relays what is buffered of the body.
    func startRelay(_ io: ExchangeIO, reportRejection: Bool, keepClient: Bool) -> ExchangeAction {
        disarm()  // the head arrived
        // Its facts, not a copy of the head: a copy would share the forwarded lines' storage,
        // and completing the head in place below would then copy them.
        guard let status = io.responseHead?.status, let framing = io.responseHead?.framing,
              let clientFraming = io.responseHead?.clientFraming else { return .none }
        if reportRejection, let credential = io.decision.credential, let token = io.token {
            context.metrics.upstreamUnauthorized[credential.name, default: 0] += 1
            credential.rejected(token, on: context.loop, timeout: .zero, nil)
        } else if status >= 200 && status < 300, let credential = io.decision.credential, credential.refreshable,
                  let token = io.token {
            // A token that earned a success ends the credential's backoff for rejected tokens.
            // (Only fetched tokens have one: a static token is not even copied for the call.)
            credential.accepted(token)
        }
        // A chunked body's head is staged with the first body bytes and handed to the client only
        // once those parsed: a body that is malformed from its start still gets a clean 502. (A
        // bufferevent's output cannot be taken back: libevent freezes its start.) No other
        // framing can turn out malformed: that head goes to the client at once (a move fewer).
        let staged = framing == .chunked
        // An HTTP/2 app's stream takes the head as fields (a staged one once the body's first bytes
        // are checked), not written as text and parsed back.
        if !isHTTP2Stream || !announceResponseHead(&io.responseHead!, committed: !staged) {
            var headBytes = ResponseRewriter.head(for: &io.responseHead!, clientVersion: io.head.version, keepAlive: keepClient)
            (staged ? context.scratch.buffer : clientOutput).append(headBytes)
            headBytes.removeAll(keepingCapacity: true)
            context.headBytes = headBytes
        }
        io.responseCommitted = !staged
        // An HTTP/2 app's stream carries the end and the trailers apart from the bytes: nothing
        // is chunk-framed for it (``HTTP2OutboundMessage/Phase/untilEnd``).
        let chunkedOutput = clientFraming == .chunked && !isHTTP2Stream
        io.responseEndsAppStream = clientFraming == .chunked && isHTTP2Stream
        if framing == .chunked, io.withUpstream({ $0.http2Stream?.bodyEndsWithStream }) == true {
            // An HTTP/2 upstream's body of unknown length: unframed, ended by its stream.
            io.responseRelay = BodyRelay(untilMessageEnd: chunkedOutput, forwardTrailers: true)
        } else {
            io.responseRelay = BodyRelay(framing: framing, chunkedOutput: chunkedOutput, forwardTrailers: true)
        }
        // (The clocks need no change: the relay starts in the phase the send or the request's
        // completion set them for.)
        let readAhead = responseReadAhead(io)
        io.withUpstream { $0.startReading(readAhead: readAhead) }
        return pumpResponse(io)
    }

    /// The client caught up with the response: the spool's next part first (if there is a
    /// spool), then the backend is read again and what it has buffered relayed.
    func resumeResponse(_ io: ExchangeIO) -> ExchangeAction {
        if let spool = io.spool {
            if let error = writeSpool(spool) { return spoolFailed(error) }
            // The backend is done (its connection released): only the spool was left.
            if io.upstream == nil { return spoolWritten(spool) }
        }
        guard let upstream = io.upstream else { return .none }
        unmarkStalled(io)
        // The client's output drained: it has everything relayed but what a spool still holds.
        upstream.clientTook(Int(truncatingIfNeeded: io.responseRelay.bodyBytes) - (io.spool?.undelivered ?? 0))
        upstream.startReading(readAhead: responseReadAhead(io))
        return pumpResponse(io)
    }

    /// Relays what the backend has buffered toward the client (or behind a spool's bytes).
    func pumpResponse(_ io: ExchangeIO) -> ExchangeAction {
        // (`input` lives while the exchange holds its upstream, which nothing here gives up.)
        guard let input = io.withUpstream({ $0.input }) ?? nil else { return .none }
        if io.responseRelay.awaitsMessageEnd { takeMessageEnd(io) }
        if let spool = io.spool, spool.undelivered > 0 {
            // Bytes are waiting in the spool: new ones go behind them.
            return pumpIntoSpool(io, spool, from: input)
        }
        let destination = io.responseCommitted ? clientOutput : context.scratch.buffer
        // (A stream of a busy HTTP/2 connection fills its output in the smallest steps, as it
        // reads its backend: 192 no-read streams otherwise each held 256 KiB.)
        let window = isStreamOfBusyHTTP2Connection ? BufferBudget.floor : context.bufferBudget.window
        var progress: Exchange.BodyProgress
        do {
            progress = Exchange.BodyProgress(try io.responseRelay.pump(from: input, to: destination, limit: window))
        } catch {
            progress = .malformed
        }
        if !io.responseCommitted {
            if progress != .malformed {
                if isHTTP2Stream { commitResponseHead() }
                context.scratch.buffer.moveAll(to: clientOutput)
                io.responseCommitted = true
            } else {
                // The error response the exchange writes instead is the stream's head.
                if isHTTP2Stream { dropResponseHead() }
            }
        }
        chargeOutput()
        let spool = Exchange.SpoolFacts(undelivered: 0, canSpool: canSpool(io))
        return connection.exchangeEvent { $0.responseBodyRelayed(progress, trailingBytes: progress == .complete ? input.count : 0,
                                                                 responseBytesSent: io.responseCommitted, spool: spool) }
    }

    /// The backend's close ended a close-delimited body: finish the client's framing (after the
    /// spool's bytes, if the response goes through one) and complete.
    func endBodyAtClose(_ io: ExchangeIO) -> ExchangeAction {
        let spool = io.spool.flatMap { $0.undelivered > 0 ? $0 : nil }
        let clean = io.responseRelay.finishAtClose(to: spool?.staging ?? clientOutput)
        let undelivered = spool?.undelivered ?? 0
        return connection.exchangeEvent { $0.responseEndedAtClose(clean: clean, undelivered: undelivered) }
    }

    // MARK: - a client that falls behind

    /// The client is not keeping up and no spool takes the rest: stop reading the backend. The
    /// connection is held meanwhile, so the worker may take it back for a request that waits.
    func pauseUpstream(_ io: ExchangeIO) {
        guard let upstream = io.upstream else { return }
        upstream.stopReading()
        upstream.clientFellBehind()
        guard !io.stalled else { return }
        io.stalled = true
        // Requests already queued for this upstream are served first by the client that
        // stopped reading first (this one, or one before it): the pool decides.
        context.pool.stalled(upstream)
    }

    /// The response is no longer paused on the client while holding the upstream.
    func unmarkStalled(_ io: ExchangeIO) {
        guard io.stalled else { return }
        io.stalled = false
        if let upstream = io.upstream { context.pool.resumed(upstream) }
    }

    /// A request waits for the connection this session holds for a client that stopped reading:
    /// cut the response short and free the connection's slot.
    func upstreamWanted(_ upstream: UpstreamConnection) {
        guard let io = current, io.upstream === upstream else { return }
        io.stalled = false
        context.metrics.stalledClientsCut += 1
        context.logger.debug("a client that stopped reading gave up its backend connection to a waiting request",
                             metadata: ["upstream": .string(io.target.poolKey)])
        perform(connection.exchangeEvent { $0.upstreamWanted() })
    }

    /// The client fell behind: open the exchange's spool (once) and relay into it, so the
    /// backend can finish sending. Without a spool file the backend is paused, as before.
    func startSpooling(_ io: ExchangeIO) -> ExchangeAction {
        guard let upstream = io.upstream, let input = upstream.input else { return .none }
        let spool: ResponseSpool
        if let existing = io.spool {
            spool = existing
        } else {
            let created: ResponseSpool?
            do {
                created = try ResponseSpool(budget: context.spoolBudget, expected: io.responseRelay.remainingLength ?? 0)
            } catch {
                context.logger.warning("cannot spool a response; the backend waits for the client instead",
                                       metadata: ["error": .string(error.description)])
                created = nil
            }
            guard let created else {
                // Another worker took the budget meanwhile, or no file: wait for the client.
                pauseUpstream(io)
                return .none
            }
            spool = created
            io.spool = spool
            context.metrics.spooledResponses += 1
        }
        return pumpIntoSpool(io, spool, from: input)
    }

    /// How far the backend's response is read ahead of the client (``BufferBudget``). A stream
    /// of an HTTP/2 app connection with many streams open reads its backend in the budget's
    /// smallest steps: hundreds of such streams may be ready in one loop iteration, and 128 KiB
    /// reads for each (25 MB for the no-read attack's 192 connections) held up another app's
    /// request for tens of milliseconds. (Its window to the app is 64 KiB by default anyway.)
    private func responseReadAhead(_ io: ExchangeIO) -> Int {
        let needed = io.responseRelay.bytesNeededAtOnce
        if isStreamOfBusyHTTP2Connection { return BufferBudget.smallestReadAhead(needing: needed) }
        return context.bufferBudget.readAhead(needing: needed)
    }

    /// How far a session reads its backend's response ahead until the head is read: the
    /// smallest step for a stream of a busy HTTP/2 connection (``responseReadAhead(_:)`` reads
    /// its body in those steps too), else the full read-ahead.
    var headReadAhead: Int {
        isStreamOfBusyHTTP2Connection ? BufferBudget.floor : WorkerContext.readAhead
    }

    /// Whether this session serves one stream of an HTTP/2 app connection with many streams open
    /// (``HTTP2ServerSession/hasManyStreams``): it yields upstream connections (and never spools:
    /// ``canSpool(_:)``). False for any other session (it has no ``http2Load``).
    var isStreamOfBusyHTTP2Connection: Bool {
        http2Load?.hasManyStreams == true
    }

    /// Whether a response whose client fell behind can go (on) through a spool: it has one
    /// already (emptied by a client that caught up; a known length's budget is still taken), or
    /// the budget has room for what is left of it. A stream of an HTTP/2 app connection never
    /// starts one when the connection has many streams open, or when the app never opened the
    /// stream's window beyond its first: an app whose streams stop reading would otherwise
    /// have every response written to disk (measured: 1.2 GB in 8 s for 50 connections × 100
    /// streams; with only the first rule, the connections held to 4 streams by a full worker
    /// still spooled 169 responses, and the disk writes took a quarter of the loop's time while
    /// the attack began). It holds its upstream connection instead, which the pool takes back
    /// for a request that waits.
    private func canSpool(_ io: ExchangeIO) -> Bool {
        if io.spool != nil { return true }
        guard mayStartSpool else { return false }
        return context.spoolBudget.hasRoom(for: io.responseRelay.remainingLength)
    }

    /// Relays what the backend sent into the spool, writing it to the file while the budget
    /// has room; a full budget pauses the backend (the staged bytes wait in memory).
    private func pumpIntoSpool(_ io: ExchangeIO, _ spool: ResponseSpool, from input: EventBuffer) -> ExchangeAction {
        if io.responseRelay.awaitsMessageEnd { takeMessageEnd(io) }
        var progress: Exchange.BodyProgress
        var flushed: Bool
        repeat {
            do {
                progress = Exchange.BodyProgress(try io.responseRelay.pump(from: input, to: spool.staging, limit: WorkerContext.highWatermark))
            } catch {
                progress = .malformed
            }
            do {
                flushed = try spool.flush()
            } catch {
                return spoolFailed(error)
            }
        } while progress == .blocked && flushed
        let facts = Exchange.SpoolFacts(undelivered: spool.undelivered, canSpool: false)
        return connection.exchangeEvent { $0.responseBodyRelayed(progress, trailingBytes: progress == .complete ? input.count : 0,
                                                                 responseBytesSent: true, spool: facts) }
    }

    /// The HTTP/2 upstream's stream ended the body the relay moves (with its trailers): the
    /// relay completes once the bytes before the end have moved.
    @inline(never)
    private func takeMessageEnd(_ io: ExchangeIO) {
        if let trailers = io.withUpstream({ $0.http2Stream?.takeMessageEnd() }) ?? nil {
            io.responseRelay.sourceEnded(trailers: trailers)
        }
    }

    /// Tops up the client's output from the spool; reports a spool that has been delivered
    /// whole once the backend is done.
    func deliverSpool(_ io: ExchangeIO) -> ExchangeAction {
        guard let spool = io.spool else { return .none }
        if let error = writeSpool(spool) { return spoolFailed(error) }
        return spoolWritten(spool)
    }

    /// Moves what the client's output has room for from the spool; the error the disk gave, if any.
    private func writeSpool(_ spool: ResponseSpool) -> SpoolError? {
        let window = context.bufferBudget.window
        guard spool.undelivered > 0 && clientOutput.count < window else { return nil }
        do {
            try spool.deliver(to: clientOutput, max: window - clientOutput.count)
        } catch {
            return error
        }
        chargeOutput()
        return nil
    }

    /// The event after a spool write: all of it delivered, or nothing yet.
    private func spoolWritten(_ spool: ResponseSpool) -> ExchangeAction {
        spool.undelivered == 0 ? connection.exchangeEvent { $0.spoolDelivered() } : .none
    }

    /// The disk refused a spool write or read: the client gets a truncated response.
    private func spoolFailed(_ error: SpoolError) -> ExchangeAction {
        context.logger.error("response spool failed; the response is cut short", metadata: ["error": .string(error.description)])
        return connection.exchangeEvent { $0.spoolFailed() }
    }

    // MARK: - the process's buffer budget

    /// Counts what the client's output holds beyond ``BufferBudget/floor`` against the
    /// process's budget (only a client that falls behind gets there).
    @inline(__always)
    func chargeOutput() {
        let charge = max(0, clientOutput.count - BufferBudget.floor)
        if charge != outputCharge {
            context.bufferBudget.adjust(by: charge - outputCharge)
            outputCharge = charge
        }
    }

    /// The session ends: whatever its output held is no longer counted.
    func releaseOutputCharge() {
        if outputCharge != 0 {
            context.bufferBudget.adjust(by: -outputCharge)
            outputCharge = 0
        }
    }

    // MARK: - ending an exchange

    func finish(_ io: ExchangeIO, upstream disposal: UpstreamDisposal, keepClient: Bool) {
        disarm()
        // An HTTP/2 app's response of unknown length ends here, with the trailers the relay kept.
        if io.responseEndsAppStream { endResponse(trailers: io.responseRelay.takeTrailers()) }
        if isGRPCStream { reportTrailingRejection(io) }
        account(io, status: io.responseHead?.status ?? 0, error: nil)
        dispose(upstreamOf: io, disposal)
        current = nil
        if !keepClient {
            close()
            return
        }
        setClientTimeouts(read: nil, write: context.timeouts.bodyIdle)
        startClientReading()
        awaitNextRequest()
        readRequests()
    }

    /// A gRPC call whose trailers said UNAUTHENTICATED after response messages: passed through
    /// as it is (its messages are the app's already), but the token is reported rejected, so
    /// the credential refetches as for a 401.
    @inline(never)
    func reportTrailingRejection(_ io: ExchangeIO) {
        guard let pipe = io.upstream?.http2Stream, pipe.takeUnauthenticatedTrailers(),
              let credential = io.decision.credential, let token = io.token else { return }
        context.metrics.upstreamUnauthorized[credential.name, default: 0] += 1
        credential.rejected(token, on: context.loop, timeout: .zero, nil)
    }

    /// Gives the exchange's upstream connection back to the pool, or closes it, as decided.
    func dispose(upstreamOf io: ExchangeIO, _ disposal: UpstreamDisposal) {
        unmarkStalled(io)
        guard let upstream = io.upstream else { return }
        io.upstream = nil
        upstream.owner = nil
        switch disposal {
        case .release where !upstream.isClosed:
            if context.pool.release(upstream, bodilessResponse: io.responseBodiless) == .discardedUnexpectedBytes {
                noteUnexpectedBytes(upstream)
            }
        case .discardUnexpectedBytes:
            noteUnexpectedBytes(upstream)
            upstream.close()
        case .release, .close:
            upstream.close()
        }
    }

    /// The backend sent bytes beyond a complete response: they must reach no client.
    private func noteUnexpectedBytes(_ upstream: UpstreamConnection) {
        let label = "\(upstream.target.host):\(upstream.target.port)"
        // Bounded: with `otherHosts: forward` any host can appear; the rest share one series.
        let series = context.metrics.upstreamDiscarded.count < ProxyMetrics.maxUpstreamSeries
            || context.metrics.upstreamDiscarded[label] != nil ? label : "other"
        context.metrics.upstreamDiscarded[series, default: 0] += 1
        context.logger.warning("upstream sent bytes beyond a complete response; connection discarded",
                               metadata: ["upstream": .string(label)])
    }

    /// Answers the exchange's request with a proxy-generated error.
    func fail(_ io: ExchangeIO, _ failure: ExchangeFailure, close: Bool, retryAfter: Int?) {
        disarm()
        if io.queuedBody != nil {
            context.pool.cancel(self, key: io.target.poolKey)
            io.queuedBody = nil
        }
        discardUpstream(io)
        // Nothing staged for this exchange goes anywhere: a request body (it failed while being
        // staged or collected), a response head whose body turned out malformed.
        io.heldBody = nil
        context.scratch.buffer.drain(context.scratch.buffer.count)
        let error = proxyError(for: failure, io: io)
        account(io, status: error.status, error: error.type)
        current = nil
        writeError(error, close: close, retryAfter: retryAfter)
        if close {
            self.close()
        } else {
            setClientTimeouts(read: nil, write: context.timeouts.bodyIdle)
            startClientReading()
            awaitNextRequest()
            readRequests()
        }
    }

    /// Response bytes already left: the client gets what is queued, then a close that leaves
    /// the message incomplete (no last chunk, or short of Content-Length).
    func truncate(_ io: ExchangeIO) {
        disarm()
        account(io, status: io.responseHead?.status ?? 502, error: "http_response_incomplete")
        discardUpstream(io)
        current = nil
        close()
    }

    /// The client left with the rest of the response cheaper to read than a new connection:
    /// the exchange is counted as an abort is, the upstream goes to an ``UpstreamDrain``
    /// (`awaitingHead`: it reads the head first; pooled once the response is complete), and the
    /// client side closes at once.
    func drainUpstream(_ io: ExchangeIO, awaitingHead: Bool) {
        account(io, status: io.responseHead?.status ?? 499, error: nil)
        unmarkStalled(io)
        if let upstream = io.upstream {
            io.upstream = nil
            // Bytes of a head already read into the exchange's reader are in the input still
            // (the reader scans without consuming): the drain reads the head from its start.
            UpstreamDrain.start(upstream, relay: awaitingHead ? nil : io.responseRelay, method: io.head.method, context: context)
        }
        current = nil
        abort()
    }

    /// Closes the exchange's upstream connection (never pooled); `reset` abandons it with a
    /// TCP reset (the client left: nothing more of this exchange should reach the backend).
    func discardUpstream(_ io: ExchangeIO, reset: Bool = false) {
        unmarkStalled(io)
        guard let upstream = io.upstream else { return }
        io.upstream = nil
        upstream.owner = nil
        upstream.close(reset: reset)
    }

    /// Refuses the request read with `error` before any exchange started (no route, a loop, a
    /// bad target): counted and logged with its head; the connection decides whether it stays.
    @inline(never)
    /// `route`: the route that refused it (its policy), nil when none was found.
    func refuse(_ error: ProxyError, head: RequestHead, connect: Bool = false, route: String? = nil) {
        account(head, status: error.status, error: error.type, route: route ?? "unrouted")
        perform(connection.refused(error, request: Self.exchangeRequest(for: head, credential: .none), connect: connect))
    }

    /// Writes a proxy-generated error, then waits for the next request or closes, as decided.
    func answer(_ error: ProxyError, keepClient: Bool) {
        writeError(error, close: !keepClient, retryAfter: nil)
        if keepClient {
            setClientTimeouts(read: nil, write: context.timeouts.bodyIdle)
            awaitNextRequest()
            readRequests()
        } else {
            close()
        }
    }

    func proxyError(for failure: ExchangeFailure, io: ExchangeIO?) -> ProxyError {
        switch failure {
        case .tokenUnavailable:
            return .tokenUnavailable(io?.decision.credential?.name ?? "")
        case .tokenRefused:
            let code = io?.decision.credential?.refusal() ?? "invalid_grant"
            return ProxyError(status: 403, type: "http_request_denied",
                              message: "the token server refused a token for this request (\(code))",
                              details: ["token_error": code])
        case .bodyTooLarge:
            return ProxyError(status: 413, type: "http_request_error",
                              message: "the request body is larger than \(context.local?.limits.maxBodyBytes ?? 0) bytes")
        case .bodyTooLargeToHash(let limit):
            return ProxyError(status: 413, type: "http_request_error",
                              message: "the request body is larger than \(limit) bytes, the most the sidecar hashes to sign a request; send x-amz-content-sha256")
        case .malformedBody:
            return .badRequest("malformed chunked request body")
        case .bodyStartTimeout:
            return ProxyError(status: 408, type: "http_request_error",
                              message: "the request body did not start within timeouts.clientHeader")
        case .bodyIdleTimeout:
            return ProxyError(status: 408, type: "http_request_error",
                              message: "the request body made no progress within timeouts.bodyIdle")
        case .connectionLimit:
            return .connectionLimitReached(context.maxConnectionsPerUpstream)
        case .malformedResponse(let problem):
            return .upstreamProtocol(problem)
        case .responseTimeout:
            return ProxyError(status: 504, type: "http_response_timeout",
                              message: "the backend did not send a response head within timeouts.responseHeaders")
        case .upstreamEnd(.prohibitedDestination, _, _):
            return ProxyError(status: 403, type: "destination_ip_prohibited",
                              message: "the destination resolves to a link-local or metadata address; name it as a route's upstream to allow it")
        case .upstreamEnd(.connectTimeout, _, _):
            return ProxyError(status: 504, type: "connection_timeout",
                              message: "could not connect to the backend within timeouts.connect")
        case .upstreamEnd(.streamRefused, _, _):
            return ProxyError(status: 502, type: "connection_refused",
                              message: "the HTTP/2 backend refused the request's stream \(Exchange.maxRefusals) times without processing it")
        case .upstreamEnd(.connection(let end), let connected, let partial):
            return .upstreamFailure(end, connected: connected, partial: partial)
        }
    }
}
