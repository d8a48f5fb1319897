import Config
import EventLoop
import HTTP1
import HTTPMessage
import TokenManager
import Tracing

/// The request side: heads, routing, tokens, connections, request bodies.
extension ExchangeSession: UpstreamWaiter {
    // Cold paths are kept out of line (`@inline(never)`): inlined into the loop of
    // ``readRequests()``, their message strings were materialized on every call of it.
    @inline(never)
    func reject(_ error: any Error) {
        // (Only a connection's: a stream's input is its body, which may well begin with the preface.)
        if continueAsHTTP2IfPreface() { return }
        let parseError = error as? HTTPParseError ?? .invalid("malformed request")
        let proxyError: ProxyError
        switch parseError {
        case .headTooLarge:
            proxyError = .headTooLarge("the request head is larger than \(context.requestHeadLimit) bytes")
        case .tooManyFields: proxyError = .headTooLarge("the request has more than \(context.requestFieldLimit) header fields")
        case .invalid(let message): proxyError = .badRequest("malformed request: \(message)")
        }
        perform(connection.headMalformed(proxyError))
    }

    /// Routes a parsed head and starts its exchange (or answers at once: loop, no route, CONNECT).
    /// Out of line: see ``reject(_:)``.
    @inline(never)
    func begin(_ head: consuming RequestHead) {
        if let service = context.local {
            beginLocal(head, service)
            return
        }
        if RequestHeadParser.isConnect(head.method) {
            startTunnel(head)
            return
        }
        if head.withFieldSection(FieldNames.viaMentionsSidecar) {
            refuse(ProxyError(status: 508, type: "proxy_loop_detected", message: "the request already passed through token-sidecar"),
                   head: head)
            return
        }
        var decision: RouteDecision
        // A ternary, not `Optional.map ?? …`: the decision is not copied through an optional.
        switch intercepted == nil ? context.withRouter({ $0.decide(head) })
            : context.withRouter({ $0.decide(head, intercepted: intercepted.unsafelyUnwrapped, serverName: appConnection?.tlsServerName,
                                                 secure: appConnection?.isTLS ?? false) }) {
        case .success(let routed): decision = routed
        case .failure(let error):
            refuse(error, head: head)
            return
        }
        var rules: RuleCheck.Recorded?
        var rulesPath: String?
        if let policy = decision.policy {
            switch checkRules(head, policy, route: decision.routeName ?? "") {
            case .failure(let refusal):
                auditRefusal(head, decision, error: refusal.error, reason: refusal.reason.rawValue, path: refusal.path)
                refuse(refusal.error, head: head, route: decision.routeName)
                return
            case .success(let outcome):
                if let target = outcome.editedTarget {
                    head = head.edited(target: target) { section, out in
                        for line in section.lines { out.copy(line, from: section) }
                    }
                }
                rules = outcome.recorded
                rulesPath = outcome.path
            }
        }
        var overLimit: LimitVerdict.Kind?
        if let limits = decision.limits {
            switch checkLimits(head, decision, limits, path: rulesPath) {
            case .refused: return
            case .audited(let kind): overLimit = kind
            case .admitted: break
            }
        }
        if context.withRouter({ $0.placeholders != nil }) {
            switch checkPlaceholders(head, decision) {
            case .success(let checked): decision = checked
            case .failure(let error):
                refuse(error, head: head)
                return
            }
        }
        var sigv4: SigV4Request?
        if let injection = decision.injection, case .sigv4(let settings)? = injection.placement {
            switch checkSigV4(head, settings) {
            case .success(let request): sigv4 = request
            case .failure(let error):
                refuse(error, head: head)
                return
            }
        }
        if isGRPCStream { decision = decision.requiringHTTP2() }
        if decision.injection?.placeholder == nil && decision.keepsClientAuthorization && decision.credential != nil && Self.carriesOwnAuthorization(head) {
            decision = decision.keepingClientAuthorization()
        }
        var variant: TokenVariantKey?
        if let perRequest = decision.perRequest {
            switch perRequest.credential(for: head, wallClock: SystemTokenClock().wallClockSeconds) {
            case .success(let (credential, key)):
                decision = decision.with(credential: credential)
                variant = key
            case .failure(let error):
                refuse(error, head: head)
                return
            }
        }
        let credential: Exchange.CredentialUse
        if let routed = decision.credential { credential = routed.refreshable ? .refreshable : .fixed } else { credential = .none }
        // An upgrade goes on only from a bodyless HTTP/1.1 request to a protocol the route
        // allows; any other keeps the request plain HTTP, its Upgrade fields removed (RFC 9110
        // §7.8), so no body and no refused protocol can ever become a tunnel.
        let bodyless = head.framing == .none || head.framing == .contentLength(0)
        let upgrade = bodyless && head.hasConnectionField && head.version == .http1_1
            ? head.withFieldSection { $0.upgradeProtocol() }.flatMap { decision.upgrades.allows($0.name) ? $0 : nil } : nil
        var request = Self.exchangeRequest(for: head, credential: credential)
        request.upgrade = upgrade != nil
        if let sigv4, sigv4.needsBodyHash { request.wholeBodyLimit = sigv4.hashedBodyLimit }
        // An HTTP/2 stream's body without a length (translated as chunked) is a stream: a gRPC
        // call or a conversation, each message waiting for its answer. A gRPC call's head goes
        // on before its first message (a server may speak first).
        if isHTTP2Stream && request.chunked { request.bodyFlow = isGRPCStream ? .streamedHeadFirst : .streamed }
        // The head and the decision move into the exchange's I/O record (no copy of the head's
        // fields; `consume`, their last uses: passed as it was, the decision was retained for the
        // record and released here at the end, two atomic operations).
        let io = ExchangeIO(head: consume head, decision: consume decision, context: context,
                            streamedBody: isHTTP2Stream && request.chunked)
        if let variant { io.variant = variant }
        if let sigv4 { io.sigv4 = sigv4 }
        if let rules { io.rules = rules }
        if let rulesPath { io.rulesPath = rulesPath }
        if let overLimit { io.overLimit = overLimit }
        if let tracer = context.tracer { RequestTrace.begin(io, tracer: tracer, ids: &context.traceIDs) }
        io.upgrade = upgrade
        current = io
        perform(connection.startExchange(request), continuing: io)
    }

    /// The decision of a route's rules (``RuleCheck``): a refusal, or what goes on (with the
    /// normalized target to send when it differs). Out of line: most routes have no rules.
    @inline(never)
    private func checkRules(_ head: borrowing RequestHead, _ policy: RoutePolicy, route: String) -> Result<RuleCheck.Outcome, RuleCheck.Refusal> {
        RuleCheck.check(head, policy: policy, route: route)
    }

    /// What a route's limits made of a request.
    private enum LimitOutcome {
        case admitted
        /// Over a limit the route only audits: it goes on, its audit record says so.
        case audited(LimitVerdict.Kind)
        /// Refused with 429 (answered, recorded).
        case refused
    }

    /// Asks the route's limits (and its credential's) to admit the request; a refusal is
    /// answered here. Out of line: most routes have no limits.
    @inline(never)
    private func checkLimits(_ head: borrowing RequestHead, _ decision: RouteDecision, _ limits: RouteLimits, path: String?) -> LimitOutcome {
        let verdict = limits.admit()
        guard case .refused(_, let kind, _) = verdict, let error = verdict.error else { return .admitted }
        guard limits.enforced else { return .audited(kind) }
        auditRefusal(head, decision, error: error, reason: kind.rawValue, path: path)
        refuse(error, head: copy head, route: decision.routeName)
        return .refused
    }

    /// The decision for a request of a configuration with placeholders (``PlaceholderPolicy``).
    /// Out of line: most configurations have none.
    @inline(never)
    private func checkPlaceholders(_ head: borrowing RequestHead, _ decision: RouteDecision) -> Result<RouteDecision, ProxyError> {
        context.withRouter { router in
            router.placeholders.map { PlaceholderPolicy.decide(copy head, decision, scanner: $0) } ?? .success(decision)
        }
    }

    /// What the exchange needs to know about `head`.
    static func exchangeRequest(for head: borrowing RequestHead, credential: Exchange.CredentialUse) -> Exchange.Request {
        Exchange.Request(
            idempotent: isIdempotent(head.method), keepAlive: head.keepAlive,
            bodyless: head.framing == .none || head.framing == .contentLength(0),
            chunked: head.framing == .chunked, expectsContinue: head.expectsContinue, credential: credential,
            http11: head.version == .http1_1)
    }

    /// Whether the request has an `Authorization` that will be forwarded: one the client did not
    /// also name in `Connection` (such a field is hop-by-hop and stripped either way).
    static func carriesOwnAuthorization(_ head: borrowing RequestHead) -> Bool {
        head.withFieldSection { section in
            section.lines.contains { section.name(of: $0, equals: "authorization") }
                && !section.options(section.connectionOptions(), contain: "authorization")
        }
    }

    /// RFC 9110 §9.2.2: methods whose repetition has the same effect as one request. (By length
    /// first: a String comparison that fails is an out-of-line call, and a `POST`, a gRPC call's
    /// method, failed six; a Set lookup hashes.)
    static func isIdempotent(_ method: String) -> Bool {
        // (And by first letter: two short Strings that differ go through the standard library's
        // out-of-line comparison, and `POST` and `HEAD` have one length.)
        switch (method.utf8.count, method.utf8.first) {
        case (3, UInt8(ascii: "G")): return method == "GET"
        case (3, UInt8(ascii: "P")): return method == "PUT"
        case (4, UInt8(ascii: "H")): return method == "HEAD"
        case (5, UInt8(ascii: "T")): return method == "TRACE"
        case (6, UInt8(ascii: "D")): return method == "DELETE"
        case (7, UInt8(ascii: "O")): return method == "OPTIONS"
        default: return false
        }
    }

    /// The credential's current token, or a bounded wait on this loop for its first one.
    /// A credentialed request is never forwarded without a token.
    func lookUpToken(_ io: ExchangeIO) -> ExchangeAction {
        guard let credential = io.decision.credential else { return .none }
        if let token = signable(credential.currentToken(), io) {
            io.token = token
            return connection.exchangeEvent { $0.tokenResolved(available: true) }
        }
        io.trace?.tokenWaitStarted()
        credential.waitForToken(on: context.loop, timeout: credential.tokenWait) { [self] waited in
            guard current === io else { return }
            let token = signable(waited, io)
            io.trace?.tokenWaitEnded(token)
            io.token = token
            // (An answer that keeps the connection goes on with the pipelined requests: `fail`.)
            let refused = token == nil && credential.refusal() != nil
            perform(connection.exchangeEvent { $0.tokenResolved(available: token != nil, refused: refused) })
        }
        return .none
    }

    /// Validates (and stages) the body bytes already buffered before anything goes upstream,
    /// so a malformed chunked body sent with its head never reaches the backend.
    func stageBody(_ io: ExchangeIO, copy copying: Bool) -> ExchangeAction {
        let staged = context.scratch.buffer
        if io.requestRelay.awaitsMessageEnd { takeBodyEnd(io) }
        var progress: Exchange.BodyProgress
        do {
            // A body held whole to be hashed is staged up to its limit (one byte past it: too large).
            var limit = WorkerContext.highWatermark
            if io.isSigned, let sigv4 = io.sigv4, sigv4.needsBodyHash { limit = sigv4.hashedBodyLimit + 1 }
            progress = Exchange.BodyProgress(try io.requestRelay.pump(from: clientInput, to: staged, limit: limit))
        } catch {
            progress = .malformed
        }
        let copy = copying && !staged.isEmpty && staged.count <= Exchange.resendLimit
            ? staged.peekBytes(max: staged.count) : nil
        // What the exchange decides is done with the staged bytes by the action itself: held
        // (`holdBody`), sent after the collected ones (`acquireUpstream`), dropped (`fail`).
        let stagedBytes = staged.count, heldBytes = io.heldBody?.buffer.count ?? 0
        return connection.exchangeEvent { $0.bodyStaged(progress, stagedBytes: stagedBytes, heldBytes: heldBytes, copy: copy) }
    }

    /// Keeps the staged body bytes with the exchange (the worker's scratch buffer is shared)
    /// until the body is complete or long enough to take a backend connection for.
    func holdBody(_ io: ExchangeIO) {
        // The body started: its start timer no longer applies.
        disarm()
        let held = io.heldBody ?? OwnedEventBuffer()
        context.scratch.buffer.moveAll(to: held.buffer)
        io.heldBody = held
        // A client that stops sending its body for bodyIdle is ended by its read timeout.
        setClientTimeouts(read: context.timeouts.bodyIdle, write: context.timeouts.bodyIdle)
    }

    /// Takes a connection for the staged request (in the worker's scratch buffer, after the
    /// bytes collected before it).
    func acquireUpstream(_ io: ExchangeIO, checkStale: Bool, pauseClient: Bool) -> ExchangeAction {
        if let held = io.heldBody {
            // The collected bytes go first: the scratch buffer holds the newest.
            let staged = context.scratch.buffer
            staged.moveAll(to: held.buffer)
            held.buffer.moveAll(to: staged)
            io.heldBody = nil
        }
        disarm()
        // Staging filled up: the client waits until the upstream takes the staged bytes. (Before
        // acquiring: a request that gets no connection fails and closes the client anyway.)
        if pauseClient { stopClientReading() }
        // The routed target is passed in place (a `let` of an immutable decision); `target`,
        // which may be the token's bound one, would be a copy (three retains and releases).
        let decision = io.decision
        // A stream of an HTTP/2 app connection with many open waits behind other clients, if
        // it must wait: apps that open streams they never read cannot hold everyone's queue.
        let yields = isStreamOfBusyHTTP2Connection
        let result = decision.certificateBound == nil ? context.pool.acquire(decision.target, waiter: self, checkStale: checkStale, yields: yields)
            : context.pool.acquire(io.target, waiter: self, checkStale: checkStale, yields: yields)
        switch result {
        case .ready(let upstream):
            io.upstream = upstream
            return connection.exchangeEvent { $0.upstreamAssigned(upstreamConnected: upstream.isConnected) }
        case .queued:
            // At the connection limit: keep the staged body here while queued.
            if context.scratch.buffer.isEmpty {
                io.queuedBody = context.noQueuedBody
            } else {
                let held = OwnedEventBuffer()
                context.scratch.buffer.moveAll(to: held.buffer)
                io.queuedBody = held
            }
            return connection.exchangeEvent { $0.upstreamQueued() }
        case .overloaded:
            context.scratch.buffer.drain(context.scratch.buffer.count)
            return connection.exchangeEvent { $0.upstreamUnavailable() }
        }
    }

    /// A queued request got its connection.
    func pool(didProvide upstream: UpstreamConnection) {
        guard let io = current, io.queuedBody != nil else {
            context.pool.release(upstream)
            return
        }
        io.upstream = upstream
        perform(connection.exchangeEvent { $0.queuedUpstreamProvided(upstreamConnected: upstream.isConnected) }, continuing: io)
    }

    /// The exchange has no use for the connection the pool handed it: back to the pool.
    func declineUpstream(_ io: ExchangeIO) {
        guard let upstream = io.upstream else { return }
        io.upstream = nil
        context.pool.release(upstream)
    }

    /// Writes the head and the staged body to the assigned upstream and starts the clocks.
    /// `traced`: the request's trace starts an attempt span whose `traceparent` the head carries.
    @inline(__always)
    func sendRequest(_ io: ExchangeIO, readingBody: Bool, responseTimer: Bool, traced: Bool) -> ExchangeAction {
        guard let upstream = io.upstream else { return .none }
        let body: EventBuffer
        if let held = io.queuedBody { body = held.buffer } else { body = context.scratch.buffer }
        upstream.owner = self
        upstream.requestsServed += 1
        // A new response starts: nothing of an earlier one (cut short by a timeout, a close or a
        // refused head) may be part of how this one is scanned.
        responseReader.reset()
        upstream.responseStarts()
        if let sigv4 = io.sigv4 { signHead(io, sigv4, body: body) }
        let headCount: Int
        if traced {
            let rewrite = io.propagation.nextAttempt()
            if let trace = io.trace { trace.attemptStarted(rewrite.traceParent, number: io.propagation.attempts) }
            if upstream.takesTextHead {
                headCount = RequestRewriter.write(io.head, decision: io.decision, token: io.token, upgrade: io.upgrade?.text,
                                                  trace: rewrite, via: receivedProtocol(io), to: upstream.output)
            } else {
                headCount = upstream.sendHead(UpstreamRequestPlan(head: io.head, decision: io.decision, token: io.token,
                                                                  upgrade: io.upgrade?.text, trace: rewrite,
                                                                  via: receivedProtocol(io),
                                                                  bodyEndsWithStream: io.requestEndsWithStream))
            }
        } else if upstream.takesTextHead {
            headCount = RequestRewriter.write(io.head, decision: io.decision, token: io.token, upgrade: io.upgrade?.text,
                                              via: receivedProtocol(io), to: upstream.output)
        } else {
            // An HTTP/2 upstream's stream takes the head typed (or, before a negotiated
            // upstream's protocol is known, it waits for it).
            headCount = sendPlannedHead(io, upstream)
        }
        io.requestQueued = headCount + body.moveAll(to: upstream.output)
        // A streamed body staged whole before the send: its end follows it.
        if io.requestEndsWithStream && io.requestRelay.isComplete { upstream.endRequestBody() }
        let wasQueued = io.queuedBody != nil
        io.queuedBody = nil
        // The wait in the queue is over (its timer, `connect`, no longer applies).
        if wasQueued { disarm() }
        // The response head (up to 64 KiB) is read with the full read-ahead, whatever the body
        // before it on this connection was read with under the buffer budget; for a stream of a
        // busy HTTP/2 connection, with the smallest (raised if the head needs more: see
        // ``readResponseHead(_:)``). The first read also takes the body that came with the head:
        // the no-read attack's 192 upstream requests read 128 KiB each at once, 24 MiB and a
        // hundred milliseconds of the worker's time as the attack began.
        upstream.startReading(readAhead: headReadAhead)
        setClocks(io, readingBody: readingBody, responseTimer: responseTimer)
        return wasQueued ? connection.exchangeEvent { $0.queuedRequestSent() } : .none
    }

    /// The untraced head as a plan (out of line: the HTTP/1.1 path inlines only its text write).
    @inline(never)
    private func sendPlannedHead(_ io: ExchangeIO, _ upstream: UpstreamConnection) -> Int {
        upstream.sendHead(UpstreamRequestPlan(head: io.head, decision: io.decision, token: io.token, upgrade: io.upgrade?.text,
                                              trace: nil, via: receivedProtocol(io), bodyEndsWithStream: io.requestEndsWithStream))
    }

    /// The protocol the exchange's request came in, for its `Via` entry: an HTTP/2 stream's, or
    /// its HTTP/1.x head's version.
    @inline(__always)
    private func receivedProtocol(_ io: ExchangeIO) -> ViaProtocol {
        ViaProtocol(io.head.version, http2: isHTTP2Stream)
    }

    /// An HTTP/2 app's streamed body ended (its stream said so): the relay completes once the
    /// bytes before the end have moved.
    @inline(never)
    private func takeBodyEnd(_ io: ExchangeIO) {
        if takeRequestBodyEnd() { io.requestRelay.sourceEnded(trailers: HTTPFields()) }
    }

    /// ``sendRequest(_:readingBody:responseTimer:traced:)`` for a traced request.
    @inline(never)
    func sendTracedRequest(_ io: ExchangeIO, readingBody: Bool, responseTimer: Bool) -> ExchangeAction {
        sendRequest(io, readingBody: readingBody, responseTimer: responseTimer, traced: true)
    }

    /// Sends the request again, exactly as it was (its kept body), on a new connection: a 401
    /// replay with the new token (`replayCheckingStale`: as the exchange decided), or a retry
    /// (`nil`) after a pooled connection turned out closed, on a fresh connection.
    func resend(_ io: ExchangeIO, body: [UInt8], replayCheckingStale: Bool?) -> ExchangeAction {
        if let trace = io.trace { trace.resending(io, replay: replayCheckingStale != nil) }
        discardUpstream(io)
        io.responseHead = nil
        io.responseBodiless = false
        io.responseCommitted = false
        responseReader.reset()
        disarm()
        context.scratch.buffer.append(body)
        if let checkStale = replayCheckingStale {
            return acquireUpstream(io, checkStale: checkStale, pauseClient: false)
        }
        io.upstream = context.pool.acquireFresh(io.target)
        let connected = io.upstream?.isConnected == true
        return connection.exchangeEvent { $0.upstreamAssigned(upstreamConnected: connected) }
    }

    /// Applies the exchange's clocks (``Exchange/clocks(upstreamConnected:)``): the timeouts of
    /// both connections, and the response-head timer run or stopped.
    func setClocks(_ io: ExchangeIO, readingBody: Bool, responseTimer: Bool) {
        setExchangeTimeouts(io, readingBody: readingBody)
        if responseTimer {
            arm(after: context.timeouts.responseHeaders)
        } else {
            disarm()
        }
    }

    /// bodyIdle: no progress reading the request body, or writing either way, for that long ends
    /// the exchange.
    ///
    /// The values rarely change between exchanges, so the (cached) calls usually cost nothing.
    /// The backend's read side uses the longer of bodyIdle and responseHeaders, so it never cuts
    /// a wait for the head that responseHeaders (its own timer) still allows.
    private func setExchangeTimeouts(_ io: ExchangeIO, readingBody: Bool) {
        let state = (requestComplete: !readingBody, upstream: io.withUpstream { ObjectIdentifier($0) },
                     connected: io.withUpstream { $0.isConnected } == true)
        if let applied = io.timeoutsAppliedFor, applied == state { return }
        io.timeoutsAppliedFor = state
        let idle = context.timeouts.bodyIdle
        setClientTimeouts(read: readingBody ? idle : nil, write: idle)
        let upstreamRead = max(idle, context.timeouts.responseHeaders)
        io.withUpstream { $0.setTimeouts(read: upstreamRead, write: idle) }
    }

    /// Moves request body bytes from the client to the upstream.
    func pumpRequest(_ io: ExchangeIO, copy copying: Bool) -> ExchangeAction {
        guard let upstream = io.upstream else { return .none }
        if io.requestRelay.awaitsMessageEnd { takeBodyEnd(io) }
        let output = upstream.output
        // While the request may be sent again, its body passes through the (empty) scratch
        // buffer to be copied: a connected bufferevent's output cannot be read back (libevent
        // freezes its start, and evbuffer_copyout_from refuses a frozen buffer).
        let destination = copying ? context.scratch.buffer : output
        let before = destination.count
        var progress: Exchange.BodyProgress
        do {
            let limit = copying ? max(0, WorkerContext.highWatermark - output.count) : WorkerContext.highWatermark
            progress = Exchange.BodyProgress(try io.requestRelay.pump(from: clientInput, to: destination, limit: limit))
        } catch {
            progress = .malformed
        }
        let moved = destination.count - before
        io.requestQueued += moved
        if io.requestEndsWithStream && progress == .complete { upstream.endRequestBody() }
        var copy: [UInt8]?
        if copying {
            // (The exchange stops keeping a copy that grows past its limit.)
            if progress != .malformed && moved > 0 && moved <= Exchange.resendLimit {
                copy = destination.peekBytes(max: moved)
            }
            if progress == .malformed {
                destination.drain(destination.count)
            } else {
                destination.moveAll(to: output)
            }
        }
        return connection.exchangeEvent { $0.requestBodyForwarded(progress, movedBytes: moved, copy: copy) }
    }

}

extension Exchange.BodyProgress {
    /// The exchange's view of a relay step.
    init(_ progress: BodyRelay.Progress) {
        switch progress {
        case .complete: self = .complete
        case .needMore: self = .needMore
        case .blocked: self = .blocked
        }
    }
}

/// Size limits for heads.
enum HeadLimits {
    /// Largest request head accepted (bigger gets 431).
    static let requestHead = 64 * 1024
    /// Most field lines in a request head (more gets 431).
    static let requestFields = 100
    /// Largest response head accepted from a backend.
    static let responseHead = 64 * 1024

}
