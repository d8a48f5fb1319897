/// One request/response pair on a client connection, as a plain value-type state machine.
///
/// The session feeds it events (a request started, a token resolved, body bytes moved, an
/// upstream assigned, a response head, body progress, an end on either side, a timer) and
/// performs the single ``ExchangeAction`` each event returns. No sockets, buffers or clocks
/// inside: only the facts the decisions need, so every transition is tested without I/O
/// (`ExchangeTests`).
///
/// ```
///            start                token                body staged       upstream
///  idle ───────────▶ awaitingToken ─────▶ awaitingBody ───────────▶ awaitingUpstream ─────▶ forwarding
///   ▲                                                                   ▲  ▲                    │ response head
///   │                                                          replay   │  │ retry              ▼
///   │                                                  ┌────────── holdingRejection ◀─(401)─────┤
///   │   finish (keep-alive)                            │ pass 401 on                            │
///   ├───────────────────────────────── relaying ◀──────┴────────────────────────────────────────┘
///   │  finish (keep-alive)                  │ body complete, spool not delivered: release upstream
///   └──────────────────────────── deliveringSpool
///                                        │ finish (close) · fail · truncate · abort
///                                        ▼
///                                      closed
/// ```
///
/// It is held by its connection's machine (``ClientConnectionStateMachine``), which feeds it
/// the events of a proxied request; a request the sidecar answers itself is a state of the
/// connection (``LocalAnswer``), not of this machine.
///
/// While relaying, a client that falls behind (its output reaches the high watermark) does
/// not stop the backend: the rest of the response goes to a spool file, within the process's
/// spool budget (``SpoolFacts/canSpool``). Once the backend has sent the whole response its
/// connection goes back to the pool, and the client is served from the spool
/// (`deliveringSpool`). Without room in the budget the backend is paused, as before.
///
/// Invariants (each has a test):
/// - A request body is forwarded whole, or the exchange ends with an explicit failure
///   (an error response, or — once response bytes left — a truncated response and a closed
///   connection); the client never sees a clean message that lost bytes.
/// - A replay or retry sends exactly the original request's body bytes; a request whose body
///   went past ``resendLimit`` is never sent twice.
/// - An upstream connection goes back to the pool only after a complete response, for a
///   complete request, with no byte beyond the response.
/// - A client that ends (EOF or error) during an exchange aborts the upstream side at once.
/// - A spooled response reaches the client whole and in order, or is truncated: an upstream
///   connection is released only once the whole response is spooled.
struct Exchange {
    /// What the exchange needs to know about the request it carries.
    struct Request: Equatable {
        /// RFC 9110 §9.2.2: repeating it has the same effect as sending it once.
        var idempotent: Bool
        /// The client asked to keep the connection open after this exchange.
        var keepAlive: Bool
        /// The request has no body (no framing, or `Content-Length: 0`).
        var bodyless: Bool
        /// The body is chunked (its first size line is validated before anything goes upstream).
        var chunked: Bool
        /// `Expect: 100-continue` (the client waits for the backend before sending the body).
        var expectsContinue: Bool
        /// Whether a token is injected, and whether a 401 can lead to a different one.
        var credential: CredentialUse
        /// The client speaks HTTP/1.1 (interim responses reach it; an HTTP/1.0 client gets none).
        var http11 = true
        /// The request asks to switch to a protocol the route allows (its `Upgrade` goes on): a
        /// `101` turns both connections into one byte stream.
        var upgrade = false
        /// How the body goes upstream.
        var bodyFlow = BodyFlow.collected
        /// The body is collected whole before anything goes upstream, up to this many bytes
        /// (more: 413, nothing forwarded): a request the sidecar signs over its body's hash.
        var wholeBodyLimit: Int?
    }

    /// How a request's body goes upstream.
    enum BodyFlow: Equatable {
        /// Collected up to ``collectLimit`` (or its end) before a backend connection is taken,
        /// as nginx does: a client dripping its body holds only its own connection.
        case collected
        /// A stream whose sender may wait for answers before it sends more (an HTTP/2 stream's
        /// body of unknown length): each piece goes on as it arrives, once the first has come
        /// (within `clientHeader`: a stream that sends none holds no backend connection).
        /// Collecting held a conversation's first message until the 64 KiB it never sends.
        case streamed
        /// Streamed, and the head goes on before any of the body (a gRPC call: a server may
        /// speak first, and its upstream is HTTP/2, where a stream waiting for its body holds
        /// none of the pool's connections).
        case streamedHeadFirst
    }

    /// How the request uses a credential.
    enum CredentialUse: Equatable {
        /// No token is injected.
        case none
        /// A token that never changes (static): a 401 is passed on as it is.
        case fixed
        /// A fetched token: a 401 may be answered by replaying with a newer one.
        case refreshable
    }

    /// What the exchange needs to know about the response head being relayed.
    struct Response: Equatable {
        /// The status code.
        var status: Int
        /// The backend keeps the connection open after this response.
        var upstreamKeepAlive: Bool
        /// The client connection stays open after this response.
        var clientKeepAlive: Bool
        /// The backend's body ends when it closes the connection (no length, not chunked).
        var endsAtClose = false
        /// It rejects the request's token though its status is not 401: a gRPC call's
        /// trailers-only `grpc-status: 16` (UNAUTHENTICATED), gRPC's form of a 401.
        var rejectsToken = false
        /// The upstream is a stream of a shared HTTP/2 connection (``ResponseHeadFacts/upstreamIsStream``).
        var upstreamIsStream = false
    }

    /// What the session read in a final response head, before anything is decided about it.
    struct ResponseHeadFacts: Equatable {
        /// The status code (200 or more).
        var status: Int
        /// The backend keeps the connection open after this response.
        var upstreamKeepAlive: Bool
        /// The backend's body ends when it closes the connection.
        var endsAtClose: Bool
        /// The client can only be told where the body ends by a close (an HTTP/1.0 client and a
        /// body without a length).
        var clientFramedByClose: Bool
        /// The backend used transfer codings besides `chunked` (e.g. `gzip, chunked`).
        var otherCodings: Bool
        /// The process is draining: no client connection is kept open for another request.
        var draining: Bool
        /// A 401 that asks for a DPoP nonce (`WWW-Authenticate: DPoP error="use_dpop_nonce"`
        /// with a `DPoP-Nonce`) to a request that carried a DPoP proof: not a rejection of the token.
        var nonceChallenge = false
        /// A gRPC call's trailers-only response (HTTP 200, no body) with `grpc-status: 16`
        /// (UNAUTHENTICATED): a rejection of the token, as a 401 is.
        var grpcUnauthenticated = false
        /// The upstream is one stream of a shared HTTP/2 connection: a response that completes
        /// before the request (RFC 9113 §8.1; a gRPC server answers once it has the message,
        /// often before the END_STREAM behind it) ends that stream alone, so the upstream is
        /// released for the next request where an HTTP/1.1 connection, mid-upload, is closed.
        var upstreamIsStream = false
    }

    /// What the session knows about the response spool when it reports body progress.
    struct SpoolFacts: Equatable {
        /// Response bytes spooled and not yet handed to the client.
        var undelivered: Int
        /// A blocked response may start spooling (the budget has room and spooling is on).
        var canSpool: Bool

        /// No spool: nothing undelivered, no room.
        static let none = SpoolFacts(undelivered: 0, canSpool: false)
    }

    /// How far a body moved in one step.
    enum BodyProgress: Equatable {
        /// The whole body has been moved.
        case complete
        /// Everything available moved; more is needed.
        case needMore
        /// The destination is full: pause the source.
        case blocked
        /// The framing was malformed.
        case malformed
    }

    /// The phases of the exchange.
    enum State: Equatable {
        /// Between requests (reading the next head).
        case idle
        /// The request waits for its credential's first token.
        case awaitingToken
        /// The request is being staged, or a chunked body's first size line has not arrived.
        case awaitingBody
        /// The request waits for an upstream connection (new, pooled, or queued at the limit).
        case awaitingUpstream
        /// The request is being sent (or sent); no final response head yet.
        case forwarding
        /// A 401 is parked unread on the upstream while the credential decides on a replay.
        case holdingRejection(Response)
        /// The response is being relayed to the client (directly, or through the spool).
        case relaying(Response)
        /// The backend sent the whole response and its connection was released; the client is
        /// still being served from the spool. `keepClient`: read the next request afterwards.
        case deliveringSpool(keepClient: Bool)
        /// The connection is closing; every later event is ignored.
        case closed
    }

    /// What is kept of the request body for sending it again.
    enum Resend: Equatable {
        /// Every body byte forwarded so far (the request may be sent again).
        case keeping([UInt8])
        /// The body went past ``resendLimit`` (or no copy is useful): never sent twice.
        case notKept
    }

    /// Largest request body kept for sending again (401 replay, retry on a fresh connection).
    static let resendLimit = 64 * 1024
    /// Most bytes of a response whose client left that are read and dropped to keep the
    /// backend connection (``clientEnded(cleanly:responseLeft:)``): about what a new TLS
    /// connection costs the backend and the sidecar to set up, far less than a full response.
    static let drainLimit = 1024 * 1024
    /// A request body is collected up to this many bytes (or until complete) before a backend
    /// connection is taken, as nginx does by default: a client dripping its body holds only
    /// its own connection, never one of the upstream's `maxConnectionsPerUpstream`. Larger
    /// bodies stream once this much has arrived. Equal to ``resendLimit``, so a collected body
    /// can always be replayed.
    static let collectLimit = resendLimit

    private(set) var state = State.idle
    private(set) var request: Request?
    private(set) var requestComplete = false
    private(set) var resend = Resend.notKept
    private(set) var replayed = false
    /// The request was sent again once with a resource server's DPoP nonce.
    private(set) var nonceReplayed = false
    private(set) var retried = false
    /// How often an HTTP/2 upstream refused this request's stream unprocessed (each refusal is
    /// sent again, up to ``maxRefusals``: a server at its own per-connection request limit
    /// refuses what it will not take, and the next connection takes it).
    private(set) var refusals = 0
    /// Refusals after which the request fails (502).
    static let maxRefusals = 4
    /// The backend closed while the response was being relayed.
    private(set) var upstreamEnded = false
    /// The timer the exchange runs (armed and stopped by its actions: `waitForBody`,
    /// `holdBody`, `acquireUpstream`, `armQueueTimer`, `send`, `setClocks`, and every action
    /// that ends or restarts the exchange); ``timerFired()`` is its expiry.
    private(set) var timer: ExchangeTimer?

    /// Whether an exchange is under way (a request was started and has not finished).
    var isActive: Bool {
        switch state {
        case .idle, .closed: return false
        default: return true
        }
    }

    /// Whether request body bytes still flow from the client to an assigned upstream (the
    /// session pumps them on client reads and upstream drains).
    var isSendingRequestBody: Bool { isForwardingOrRelaying && !requestComplete }

    /// Whether the session should copy the body bytes it forwards (they may be sent again).
    var wantsBodyCopy: Bool {
        if case .keeping = resend { return true }
        return false
    }

    /// The body bytes a replay or retry sends (the whole original body).
    var resendBody: [UInt8] {
        if case .keeping(let bytes) = resend { return bytes }
        return []
    }

    /// The response head being held or relayed.
    var response: Response? {
        switch state {
        case .holdingRejection(let response), .relaying(let response): return response
        default: return nil
        }
    }

    // MARK: - request side

    /// A routed request head was parsed.
    mutating func start(_ request: Request) -> ExchangeAction {
        guard state == .idle else { return .none }
        self.request = request
        requestComplete = false
        replayed = false
        nonceReplayed = false
        retried = false
        refusals = 0
        upstreamEnded = false
        // A copy is useful when the request may be sent again: a retry (idempotent methods,
        // or any method before a byte left) or a 401 replay.
        resend = .keeping([])
        if request.credential == .none {
            state = .awaitingBody
            return .stageBody(copy: wantsBodyCopy)
        }
        state = .awaitingToken
        return .lookUpToken
    }

    /// The token lookup (immediate or after waiting) ended; `refused`: no token because the
    /// token server refused what this request asked for (its subject, scope or audience).
    mutating func tokenResolved(available: Bool, refused: Bool = false) -> ExchangeAction {
        guard state == .awaitingToken, let request else { return .none }
        guard available else {
            if refused { return fail(.tokenRefused, close: !(request.bodyless && request.keepAlive), retryAfter: nil) }
            return fail(.tokenUnavailable, close: !(request.bodyless && request.keepAlive), retryAfter: 1)
        }
        state = .awaitingBody
        return .stageBody(copy: wantsBodyCopy)
    }

    /// The body bytes buffered so far were validated and staged (`copy`: those bytes, when
    /// ``wantsBodyCopy``); `heldBytes` were staged by earlier calls and are held by the session.
    mutating func bodyStaged(_ progress: BodyProgress, stagedBytes: Int, heldBytes: Int = 0,
                             copy: [UInt8]?) -> ExchangeAction {
        guard state == .awaitingBody, let request else { return .none }
        if progress == .malformed {
            return fail(.malformedBody, close: true)
        }
        if progress == .needMore && stagedBytes + heldBytes == 0 && request.chunked && !request.expectsContinue
            && request.bodyFlow != .streamedHeadFirst {
            // Not even the first chunk-size line is complete: wait for it rather than open a
            // backend request that might have to be aborted. Bounded by clientHeader, from the
            // first wait (more bytes of the size line do not restart the clock).
            guard timer != .bodyStart else { return .none }
            timer = .bodyStart
            return .waitForBody
        }
        if let limit = request.wholeBodyLimit {
            // Signed over its hash: the head cannot go before the last byte is here.
            if heldBytes + stagedBytes > limit || progress == .blocked { return fail(.bodyTooLargeToHash(limit: limit), close: true) }
            if progress == .needMore {
                keep(copy, count: stagedBytes)
                timer = nil
                return .holdBody
            }
        }
        if progress == .needMore && !request.expectsContinue && request.bodyFlow == .collected
            && heldBytes + stagedBytes < Self.collectLimit {
            // Collect more before taking a backend connection (bounded by bodyIdle). With
            // `Expect: 100-continue` the client waits for the backend before sending: never held.
            keep(copy, count: stagedBytes)
            timer = nil
            return .holdBody
        }
        keep(copy, count: stagedBytes)
        requestComplete = progress == .complete
        timer = nil
        state = .awaitingUpstream
        // A request whose body is still coming cannot be retried (a retry needs all of it).
        return .acquireUpstream(checkStale: !(retryable && requestComplete), pauseClient: progress == .blocked)
    }

    /// The pool queued the request (the upstream is at its connection limit).
    mutating func upstreamQueued() -> ExchangeAction {
        guard state == .awaitingUpstream else { return .none }
        timer = .queue
        return .armQueueTimer
    }

    /// The pool refused to queue the request, or the queue wait timed out.
    mutating func upstreamUnavailable() -> ExchangeAction {
        guard state == .awaitingUpstream else { return .none }
        return fail(.connectionLimit, close: true, retryAfter: 1)
    }

    /// An upstream connection (`upstreamConnected`: set up already, as a pooled one is) is the
    /// exchange's: send the head and what is staged, and run the clocks of that phase
    /// (``clocks(upstreamConnected:)``).
    mutating func upstreamAssigned(upstreamConnected: Bool) -> ExchangeAction {
        guard state == .awaitingUpstream else { return .none }
        state = .forwarding
        let responseTimer = requestComplete && upstreamConnected
        timer = responseTimer ? .responseHead : nil
        return .send(readingBody: !requestComplete, responseTimer: responseTimer)
    }

    /// The pool hands a queued request the connection it waited for: sent on it, or — when the
    /// exchange no longer waits for one — the connection goes back to the pool.
    mutating func queuedUpstreamProvided(upstreamConnected: Bool) -> ExchangeAction {
        guard state == .awaitingUpstream else { return .declineUpstream }
        return upstreamAssigned(upstreamConnected: upstreamConnected)
    }

    /// The upstream connection ended or failed: bytes that arrived with the close may still
    /// complete a response head, to be read first.
    func upstreamEnding() -> ExchangeAction {
        state == .forwarding ? .readResponseHead : .none
    }

    /// Request body bytes moved from the client to the upstream (`copy`: those bytes, when
    /// ``wantsBodyCopy``).
    mutating func requestBodyForwarded(_ progress: BodyProgress, movedBytes: Int, copy: [UInt8]?) -> ExchangeAction {
        guard isForwardingOrRelaying, !requestComplete else { return .none }
        switch progress {
        case .malformed:
            // Part of the request is already upstream: it must never be completed there.
            if case .forwarding = state { return fail(.malformedBody, close: true) }
            return abort()
        case .complete:
            keep(copy, count: movedBytes)
            requestComplete = true
            return .requestComplete
        case .blocked:
            keep(copy, count: movedBytes)
            return .pauseClient
        case .needMore:
            keep(copy, count: movedBytes)
            return .none
        }
    }

    // MARK: - response side

    /// A final response head arrived: decides whether the client connection stays open and
    /// whether the response can be relayed at all, then proceeds as ``responseHead(_:)-(Response)``.
    mutating func responseHead(_ facts: ResponseHeadFacts) -> ExchangeAction {
        guard state == .forwarding, let request else { return .none }
        if facts.clientFramedByClose && facts.otherCodings {
            // An HTTP/1.0 client cannot be told about a transfer coding such as gzip.
            return responseMalformed("the backend used a transfer coding an HTTP/1.0 client cannot receive",
                                     responseBytesSent: false)
        }
        let keepClient = request.keepAlive && !facts.clientFramedByClose && !facts.draining
        let response = Response(status: facts.status, upstreamKeepAlive: facts.upstreamKeepAlive,
                                clientKeepAlive: keepClient, endsAtClose: facts.endsAtClose,
                                rejectsToken: facts.grpcUnauthenticated, upstreamIsStream: facts.upstreamIsStream)
        if facts.status == 401 && facts.nonceChallenge {
            // RFC 9449 §9: the resource server wants its nonce in the proof. Sent again once with
            // it (a fresh proof), like a 401 replay; a second challenge, or a request that cannot
            // be sent again, gets the 401. Either way the token was not rejected.
            if !nonceReplayed && requestComplete && wantsBodyCopy {
                nonceReplayed = true
                upstreamEnded = false
                timer = nil
                state = .awaitingUpstream
                return .nonceReplay(checkStale: !retryable, body: resendBody)
            }
            state = .relaying(response)
            return .relay(reportRejection: false, keepClient: keepClient)
        }
        return responseHead(response)
    }

    /// An interim (1xx) response head arrived while the request waits for its final one.
    /// `101 Switching Protocols` to a request that asked to upgrade, to the protocol it asked
    /// for (`switchesAsAsked`), ends the exchange: the connections leave HTTP
    /// (`switchProtocols`). Asked for by no one (no `Upgrade` was forwarded), or to another
    /// protocol, it is a malformed response. Others go on to HTTP/1.1 clients, and the
    /// response-head clock starts again.
    mutating func interimResponse(status: Int, switchesAsAsked: Bool = false) -> ExchangeAction {
        guard state == .forwarding, let request else { return .none }
        if status == 101 {
            guard request.upgrade && requestComplete else {
                return responseMalformed("the backend switched protocols, which was not requested", responseBytesSent: false)
            }
            guard switchesAsAsked else {
                return responseMalformed("the backend switched to a protocol that was not requested", responseBytesSent: false)
            }
            // Nothing about this client connection is HTTP any more: every later event is ignored.
            timer = nil
            state = .closed
            self.request = nil
            resend = .notKept
            return .switchProtocols
        }
        timer = .responseHead
        return .forwardInterim(toClient: request.http11)
    }

    /// A final (non-1xx) response head arrived. `status == 401` (or a gRPC UNAUTHENTICATED,
    /// ``Response/rejectsToken``) with an injected token is a rejection of that token.
    mutating func responseHead(_ response: Response) -> ExchangeAction {
        guard state == .forwarding, let request else { return .none }
        // The head arrived: its clock stops (every action from here stops it).
        timer = nil
        if (response.status == 401 || response.rejectsToken) && request.credential != .none {
            if request.credential == .refreshable && !replayed && requestComplete && wantsBodyCopy {
                // Park the 401 unread: replay if the credential comes up with another token,
                // else relay it as it is.
                state = .holdingRejection(response)
                return .holdRejection
            }
            state = .relaying(response)
            return .relay(reportRejection: true, keepClient: response.clientKeepAlive)
        }
        state = .relaying(response)
        return .relay(reportRejection: false, keepClient: response.clientKeepAlive)
    }

    /// The credential answered a held rejection: `newToken` when a different token exists.
    mutating func rejectionResolved(newToken: Bool) -> ExchangeAction {
        guard case .holdingRejection(let response) = state else { return .none }
        guard newToken else {
            state = .relaying(response)
            return .relay(reportRejection: false, keepClient: response.clientKeepAlive)
        }
        replayed = true
        upstreamEnded = false
        timer = nil
        state = .awaitingUpstream
        return .replay(checkStale: !retryable, body: resendBody)
    }

    /// Response body bytes moved toward the client (its output or the spool); `trailingBytes`
    /// is what the upstream has buffered beyond them.
    mutating func responseBodyRelayed(_ progress: BodyProgress, trailingBytes: Int, responseBytesSent: Bool,
                                      spool: SpoolFacts = .none) -> ExchangeAction {
        guard case .relaying(let response) = state, request != nil else { return .none }
        switch progress {
        case .complete:
            let upstream: UpstreamDisposal
            if trailingBytes > 0 {
                upstream = .discardUnexpectedBytes
            } else if response.upstreamKeepAlive && (requestComplete || response.upstreamIsStream) && !upstreamEnded {
                upstream = .release
            } else {
                upstream = .close
            }
            return complete(response, upstream: upstream, undelivered: spool.undelivered)
        case .blocked:
            // The client is not keeping up: spool the rest rather than hold the backend.
            return spool.canSpool ? .spoolResponse : .pauseUpstream
        case .needMore:
            // Everything the backend sent has moved. After its close, a body that ends at close
            // is complete (the client's framing is finished off first); any other was cut short.
            guard upstreamEnded else { return .none }
            if response.endsAtClose { return .endBodyAtClose }
            state = .closed
            request = nil
            resend = .notKept
            return .truncate
        case .malformed:
            return responseMalformed("the backend sent a malformed response body", responseBytesSent: responseBytesSent)
        }
    }

    /// The backend sent a malformed response (head or body). Before any of the response
    /// reached the client: a 502; after: the client sees a truncated response.
    mutating func responseMalformed(_ problem: String, responseBytesSent: Bool) -> ExchangeAction {
        guard isForwardingOrRelaying, let request else { return .none }
        if responseBytesSent {
            state = .closed
            return .truncate
        }
        return fail(.malformedResponse(problem), close: !requestComplete || !request.keepAlive)
    }

    /// The body of a relayed response ended with the backend's close: `clean` when the body is
    /// close-delimited (so this is its end). `undelivered`: spooled bytes not yet with the client.
    mutating func responseEndedAtClose(clean: Bool, undelivered: Int = 0) -> ExchangeAction {
        guard case .relaying(let response) = state else { return .none }
        guard clean else {
            state = .closed
            return .truncate
        }
        return complete(response, upstream: .close, undelivered: undelivered)
    }

    /// Another request waits for the backend connection this response holds while its client
    /// does not read (and no spool could take the rest): the response is cut short, both sides
    /// closed at once, so the connection's slot serves the waiting request.
    mutating func upstreamWanted() -> ExchangeAction {
        guard case .relaying = state else { return .none }
        return abort()
    }

    /// Everything spooled has been handed to the client's output.
    mutating func spoolDelivered() -> ExchangeAction {
        guard case .deliveringSpool(let keepClient) = state else { return .none }
        state = keepClient ? .idle : .closed
        // The upstream was disposed of when the spool took over; nothing is left to release.
        return .finish(upstream: .close, keepClient: keepClient)
    }

    /// Writing to or reading from the spool failed (a full disk, an I/O error). Part of the
    /// response has reached the client, the rest cannot: it sees a truncated response.
    mutating func spoolFailed() -> ExchangeAction {
        switch state {
        case .relaying, .deliveringSpool:
            state = .closed
            request = nil
            resend = .notKept
            return .truncate
        default:
            return .none
        }
    }

    /// The whole response body has been relayed: finish, or — with spooled bytes still to
    /// deliver — release the upstream now and finish once the spool is delivered.
    private mutating func complete(_ response: Response, upstream: UpstreamDisposal, undelivered: Int) -> ExchangeAction {
        timer = nil
        let keepClient = response.clientKeepAlive && requestComplete && (request?.keepAlive ?? false)
        request = nil
        resend = .notKept
        if undelivered > 0 {
            state = .deliveringSpool(keepClient: keepClient)
            return .releaseUpstream(upstream)
        }
        state = keepClient ? .idle : .closed
        return .finish(upstream: upstream, keepClient: keepClient)
    }

    /// What the session knows about an upstream connection that ended.
    struct UpstreamEndFacts: Equatable {
        /// Why it ended.
        var reason: UpstreamEnd
        /// Bytes were left unread: while forwarding, part of a response head.
        var partialHead: Bool
        /// TCP (and TLS) setup had completed.
        var connected: Bool
        /// The connection had carried an earlier request (it came from the pool).
        var reused: Bool
        /// None of this request's bytes had been handed to the socket.
        var nothingSent: Bool
    }

    /// The upstream connection ended or failed.
    mutating func upstreamEnded(_ facts: UpstreamEndFacts) -> ExchangeAction {
        switch state {
        case .forwarding:
            guard let request else { return .none }
            if !facts.partialHead && mayRetry(after: facts) {
                if facts.reason == .streamRefused { refusals += 1 } else { retried = true }
                timer = nil
                state = .awaitingUpstream
                return .retry(body: resendBody)
            }
            return fail(.upstreamEnd(facts.reason, connected: facts.connected, partial: facts.partialHead),
                        close: !requestComplete || !request.keepAlive)
        case .relaying:
            upstreamEnded = true
            return .pumpResponse
        case .holdingRejection:
            // The 401 is still buffered; relaying it (if no replay happens) needs nothing more.
            upstreamEnded = true
            return .none
        default:
            return .none
        }
    }

    /// Sends the request once more on a fresh connection only when that cannot duplicate it:
    /// the request is complete and its body kept, and either a pooled connection turned out to
    /// be closed (idempotent methods, or nothing of the request was sent), or a new connection
    /// failed before any request byte was sent.
    private func mayRetry(after facts: UpstreamEndFacts) -> Bool {
        if facts.reason == .streamRefused {
            // Nothing of it was processed: any method goes again, a bounded number of times.
            return refusals + 1 < Self.maxRefusals && requestComplete && wantsBodyCopy
        }
        guard !retried, requestComplete, wantsBodyCopy, let request else { return false }
        switch facts.reason {
        case .connection(.endOfStream), .connection(.socketError):
            return facts.reused ? (request.idempotent || facts.nothingSent) : !facts.connected
        case .connection(.refused):
            return true
        default:
            return false
        }
    }

    // MARK: - readiness

    /// The client's connection has bytes to read: the next request's head between requests, a
    /// body being staged, or body bytes on their way to the upstream.
    func clientReadable() -> ExchangeAction {
        switch state {
        case .idle: return .readRequests
        case .awaitingBody: return .stageBody(copy: wantsBodyCopy)
        default: return isSendingRequestBody ? .pumpRequest(copy: wantsBodyCopy) : .none
        }
    }

    /// The client took everything queued for it: while relaying, the backend (or the spool) may
    /// send more; while delivering a spool, the next part goes.
    mutating func clientDrained() -> ExchangeAction {
        switch state {
        case .relaying: return .resumeResponse
        case .deliveringSpool: return .deliverSpool
        default: return .none
        }
    }

    /// The upstream connection has bytes to read: the response head, or body bytes to relay.
    /// (A parked 401 stays unread.)
    func upstreamReadable() -> ExchangeAction {
        switch state {
        case .forwarding: return .readResponseHead
        case .relaying: return .pumpResponse
        default: return .none
        }
    }

    /// The upstream took what was queued for it: more of the request body may go.
    func upstreamDrained() -> ExchangeAction {
        isSendingRequestBody ? .resumeRequest(copy: wantsBodyCopy) : .none
    }

    /// A request that waited in the pool's queue (its client not read meanwhile) was handed to
    /// its upstream: the rest of its body, if any, comes from the client again.
    func queuedRequestSent() -> ExchangeAction {
        isSendingRequestBody ? .resumeRequest(copy: wantsBodyCopy) : .none
    }

    /// The timeouts of the phase the exchange is in: the client's read side is timed by
    /// `bodyIdle` while its body is still coming, and the response-head clock
    /// (`responseHeaders`) runs while the whole request is with a connected backend and no
    /// final head has arrived (connecting is timed by `connect`, a long upload by `bodyIdle`).
    mutating func clocks(upstreamConnected: Bool) -> ExchangeAction {
        let responseTimer = requestComplete && state == .forwarding && upstreamConnected
        timer = responseTimer ? .responseHead : nil
        return .setClocks(readingBody: !requestComplete, responseTimer: responseTimer)
    }

    /// Whether the exchange waits between requests (a new head may start one).
    var isIdle: Bool { state == .idle }

    /// Whether the backend's end must be looked at for a response head first: bytes that
    /// arrived with the close are still buffered and may complete one.
    var readsHeadAtUpstreamEnd: Bool { state == .forwarding }

    // MARK: - client side and timers

    /// The client ended (EOF or error; `cleanly`: an EOF). Between requests the connection just
    /// closes; during an exchange the upstream side is aborted at once (a client that leaves
    /// stops the transfer) — except where the rest of the response is cheaper to read and drop
    /// than a new connection (and TLS handshake) for the next request: the request was sent
    /// whole, and either no head has come yet (it is awaited briefly, then its body drained if
    /// short) or the response's length says that at most ``drainLimit`` bytes are still to come
    /// (`responseLeft`) on a connection the backend keeps. A body of unknown length, a stream,
    /// is never drained: the backend learns at once that nobody reads it. An upgrade request's
    /// connection is never kept.
    mutating func clientEnded(cleanly: Bool = false, responseLeft: Int? = nil) -> ExchangeAction {
        switch state {
        case .closed: return .none
        case .idle:
            state = .closed
            return .close
        case .forwarding where requestComplete && !upstreamEnded && request?.upgrade == false:
            end()
            return .drainUpstream(awaitingHead: true)
        case .relaying(let response) where requestComplete && response.upstreamKeepAlive && !response.endsAtClose
            && !upstreamEnded && responseLeft.map({ $0 <= Self.drainLimit }) == true:
            end()
            return .drainUpstream(awaitingHead: false)
        default:
            return abort()
        }
    }

    /// The client's read timeout expired (no byte for `bodyIdle`). While its body is being
    /// collected the client gets a 408; in any other phase this ends the exchange like a
    /// client that left.
    mutating func clientStalled() -> ExchangeAction {
        guard state == .awaitingBody else { return clientEnded() }
        return fail(.bodyIdleTimeout, close: true)
    }

    /// The exchange's timer (``timer``) expired.
    mutating func timerFired() -> ExchangeAction {
        guard let timer, let request else { return .none }
        self.timer = nil
        switch (timer, state) {
        case (.bodyStart, .awaitingBody):
            return fail(.bodyStartTimeout, close: true)
        case (.queue, .awaitingUpstream):
            return fail(.connectionLimit, close: true, retryAfter: 1)
        case (.responseHead, .forwarding):
            return fail(.responseTimeout, close: !requestComplete || !request.keepAlive)
        default:
            return .none
        }
    }

    /// The session's closing (drain, shutdown): nothing more happens.
    mutating func close() {
        state = .closed
        timer = nil
    }

    // MARK: - helpers

    private var isForwardingOrRelaying: Bool {
        switch state {
        case .forwarding, .relaying, .holdingRejection: return true
        default: return false
        }
    }

    private var retryable: Bool {
        (request?.idempotent ?? false) && wantsBodyCopy
    }

    private mutating func keep(_ copy: [UInt8]?, count: Int) {
        guard count > 0, case .keeping(var bytes) = resend else { return }
        guard let copy, copy.count == count, bytes.count + count <= Self.resendLimit else {
            resend = .notKept
            return
        }
        resend = .notKept  // release the array's storage so the append does not copy it
        if bytes.isEmpty {
            // The first bytes (all of a small body): the copy itself is kept, not copied again
            // into storage of its own.
            resend = .keeping(copy)
            return
        }
        bytes.append(contentsOf: copy)
        resend = .keeping(bytes)
    }

    private mutating func fail(_ failure: ExchangeFailure, close: Bool, retryAfter: Int? = nil) -> ExchangeAction {
        timer = nil
        state = close ? .closed : .idle
        request = nil
        resend = .notKept
        return .fail(failure, close: close, retryAfter: retryAfter)
    }

    private mutating func abort() -> ExchangeAction {
        end()
        return .abort
    }

    /// The exchange is over for this connection (aborted, or its upstream handed to a drain):
    /// every later event is ignored.
    private mutating func end() {
        timer = nil
        state = .closed
        request = nil
        resend = .notKept
    }
}

/// The timers an exchange can be waiting on.
enum ExchangeTimer: Equatable {
    /// A chunked body's first size line must arrive within `clientHeader`.
    case bodyStart
    /// A queued request must get a connection within `connect`.
    case queue
    /// The response head must arrive within `responseHeaders` of a complete request.
    case responseHead
}
