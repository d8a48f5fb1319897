import EventLoop
import HTTP1
import HTTP2

/// What the ``UpstreamPool`` lends an exchange for an HTTP/2 upstream, inside its
/// ``UpstreamConnection``: a lease of one stream at a time on the shared
/// ``HTTP2UpstreamConnection``s — each request's head opens a stream on whichever has room, and
/// the lease leaves the stream when its exchange is done with it.
/// Not a byte stream: its ``UpstreamConnection`` calls it directly and hears from it directly
/// (``user``). The exchange hands it the request's head typed (``sendHead(_:)``: name/value
/// pairs from the exchange's rewrite, never text) and its body's bytes in ``output``, sent as
/// DATA by its framing (``HTTP2OutboundMessage``: a length, an end the app's stream gave, or an
/// HTTP/1.1 app's chunks with their trailers as HTTP/2 trailers). The
/// response's heads come back typed (``withNextResponseHead(_:)``), then its body unframed in
/// ``input``: with its length, or — a body without one — ended by the stream
/// (``bodyEndsWithStream``, ``takeMessageEnd()``: the end and the trailers, gRPC's status among
/// them, go to the exchange apart from the bytes).
///
/// Between exchanges it is bound to no connection: the next request goes to whichever
/// connection has room. Its inactivity timeouts are its own: the read timeout runs while the
/// exchange reads (the pool's idle timeout while it is idle), the write timeout while request
/// bytes wait.
///
/// In memory, on its worker's loop.
final class HTTP2UpstreamLease: TouchablePipe {
    /// Listed in its connection's touched leases.
    var isTouched = false
    /// The stream for which it is listed in its connection's ``HTTP2UpstreamConnection``
    /// streams waiting for send room (0: none); another stream of the lease's lists it anew.
    var roomListedFor: Int32 = 0
    /// Likewise in its connection's streams with request body queued in the codec.
    var queueListedFor: Int32 = 0
    /// Whether it is in its connection's list of leases bound there whose stream is not open
    /// yet: leaving it looks for it there only then (a look at each entry costs four reference
    /// counts, and a busy connection lists tens).
    var awaitsStream = false
    let loop: EventLoop
    /// The pooled connection it serves, which hears its events; nil once it ended (which breaks
    /// the cycle: the user owns it).
    var user: UpstreamConnection?
    let target: UpstreamTarget
    private unowned let upstreams: HTTP2Upstreams
    private let inputBuffer = OwnedEventBuffer()
    private let outputBuffer = OwnedEventBuffer()
    /// The connection carrying the current request; nil between requests.
    private(set) var connection: HTTP2UpstreamConnection?
    private var outbound: HTTP2OutboundMessage
    /// The current request's stream id (0 until its head opened it).
    var stream: Int32 { connection == nil ? 0 : outbound.stream }
    private(set) var isConnected = false
    private var closed = false
    /// Its exchange's stream failed, or ended while the request was still going: nothing more
    /// is sent (what the session writes is dropped, as a dead socket's would be), and the pool
    /// sees it closed.
    private var dead = false
    private var isReading = false

    /// How the current response's body is written into the input.
    private enum ResponseBody {
        /// No final head yet.
        case awaitingHead
        /// As it comes (a `content-length`, or a response without a body).
        case raw
        /// As it comes, its end (and trailers) told apart (``takeMessageEnd()``).
        case untilEnd
    }
    private var responseBody = ResponseBody.awaitingHead
    /// What makes the next request's head and frames its body, until the connection's turn
    /// opens its stream with it (while ``hasPendingHead``); dropped once sent (the exchange
    /// reclaims its head's storage when it ends).
    private var pendingRequest: UpstreamRequestPlan?
    /// Whether a head is pending (read without looking into the head: a check of the optional
    /// head itself copied and destroyed it, some 300 instructions, twice per request).
    private var hasPendingHead = false
    /// The request's unframed body ended (``endRequestBody()``): its stream ends once the bytes
    /// before the end are sent.
    private var requestBodyEnded = false
    /// The response ended (`END_STREAM`).
    private(set) var responseComplete = false
    /// The response completed before the request: the lease left the stream, and the rest of
    /// the request is dropped until the next request's head.
    private var requestAbandoned = false
    /// The trailers of a body that ended with the stream, until the exchange takes the end
    /// (``takeMessageEnd()``); nil while there is no such end to take.
    private var messageEnd: HTTPFields?
    /// The response's trailers said `grpc-status: 16` (UNAUTHENTICATED) after its messages.
    private var unauthenticatedTrailers = false
    /// Response body bytes written into the input, and how many of them were reported taken.
    private var credit = StreamWindowCredit()

    private var readTimeout: Duration?
    private var writeTimeout: Duration?
    private let readTimer: Timer
    private let writeTimer: Timer
    /// Runs ``look()`` from the loop, later in the same iteration (after the pool's caller).
    private let lookTask: LoopTask

    init(target: UpstreamTarget, upstreams: HTTP2Upstreams) {
        self.target = target
        self.upstreams = upstreams
        self.loop = upstreams.loop
        outbound = HTTP2OutboundMessage()
        readTimer = Timer(on: upstreams.loop) {}
        writeTimer = Timer(on: upstreams.loop) {}
        lookTask = LoopTask(on: upstreams.loop) {}
        readTimer.action = { [unowned self] in timedOut() }
        writeTimer.action = { [unowned self] in timedOut() }
        lookTask.action = { [unowned self] in look() }
    }

    /// Connects: binds to a connection with room; ``UpstreamConnection/streamDidConnect()``
    /// follows once it is ready (at once, from the loop, when it is already).
    func connect() {
        bindIfNeeded()
    }

    private func bindIfNeeded() {
        guard connection == nil, !closed, !dead else { return }
        let chosen = upstreams.connection(for: target)
        connection = chosen
        outbound = HTTP2OutboundMessage()
        responseBody = .awaitingHead
        responseComplete = false
        // (Not `requestBodyEnded`: the request this lease binds for may have ended already,
        // between its head and this bind; ``sendHead(_:)`` clears it for each request.)
        messageEnd = nil
        // (Usually empty already: taken by the exchange. A removal of nothing still went through
        // the generic `replaceSubrange`.)
        if !responseHeads.isEmpty {
            responseHeads.removeAll(keepingCapacity: true)
            responseHeadEnds.removeAll(keepingCapacity: true)
        }
        bodyBeforeHead = false
        unauthenticatedTrailers = false
        credit = StreamWindowCredit()
        // Still listed by the connection it last used, whose turn now skips it (it is not that
        // connection's any more): unmarked, so the chosen one lists it.
        isTouched = false
        if hasSpareResponseHead {
            hasSpareResponseHead = false
            chosen.recycle(head: spareResponseHead.take())
        }
        chosen.bind(self)
        if chosen.isReady && !isConnected { connectionReady() }
    }

    /// The bound connection is ready: a lease not yet connected says so.
    func connectionReady() {
        guard !isConnected, !closed else { return }
        isConnected = true
        // From the loop: the pool's caller is still setting up when open() returns.
        announcing = true
        lookTask.schedule()
    }

    /// The connect is yet to be announced (from the loop).
    private var announcing = false

    /// Announces the connect, and binds a lease that has request bytes and no connection.
    private func look() {
        guard !closed else { return }
        if announcing {
            announcing = false
            user?.streamDidConnect()
        }
        if dead || requestAbandoned {
            if dead { dropPendingHead() }
            outputBuffer.buffer.drain(outputBuffer.buffer.count)
        } else if connection == nil && hasRequestBytes {
            bindIfNeeded()
        }
    }

    // MARK: - for its UpstreamConnection

    /// The response's body, unframed.
    var input: EventBuffer { inputBuffer.buffer }

    /// The request's body: asking for it has its connection look at it, or (between
    /// requests) has the lease bind to one once bytes are there (not on a mere look at its count).
    var output: EventBuffer {
        if !closed {
            requestChanged()
        }
        if dead || requestAbandoned { outputBuffer.buffer.drain(outputBuffer.buffer.count) }
        return outputBuffer.buffer
    }

    var isOpen: Bool { !closed }

    func startReading() {
        guard !closed else { return }
        isReading = true
        restartReadTimer()
        if !inputBuffer.buffer.isEmpty || messageEnd != nil || !responseHeads.isEmpty { connection?.touch(self) }
    }

    func stopReading() {
        isReading = false
        readTimer.suspend()
    }

    func setTimeouts(read: Duration?, write: Duration?) {
        readTimeout = read
        writeTimeout = write
        restartReadTimer()
        restartWriteTimer()
    }

    private func restartReadTimer() {
        if let readTimeout, isReading, !closed {
            readTimer.schedule(after: readTimeout)
        } else {
            readTimer.suspend()
        }
    }

    private func restartWriteTimer() {
        if let writeTimeout, hasPendingHead || !outputBuffer.buffer.isEmpty || queuedInCodec > 0, !closed {
            writeTimer.schedule(after: writeTimeout)
        } else {
            writeTimer.suspend()
        }
    }

    private func timedOut() {
        guard !closed else { return }
        user?.stream(didEnd: .timeout)
    }

    /// Ends it for good (its pooled connection closes): a stream still open is cancelled.
    func close() {
        guard !closed else { return }
        closed = true
        user = nil
        dropPendingHead()
        readTimer.cancel()
        writeTimer.cancel()
        lookTask.cancel()
        if let connection {
            self.connection = nil
            if responseComplete && outbound.phase == .done {
                connection.detach(self, stream: outbound.stream)
            } else {
                // (Nothing of the response: no head, and no body before one.)
                connection.cancel(self, stream: outbound.stream,
                                  nothingReceived: responseBody == .awaitingHead && responseHeads.isEmpty && !bodyBeforeHead)
            }
        }
    }

    /// What came from the upstream that the exchange has not taken: a response's head or body
    /// bytes (``PeerActivity/data``), or its failure (``PeerActivity/closed``).
    var seenPeerActivity: PeerActivity {
        if closed || dead { return .closed }
        return inputBuffer.buffer.isEmpty && responseHeads.isEmpty ? .quiet : .data
    }

    /// The session took response bytes: the stream's window may reopen.
    func widenReceiveWindow(taken: Int) {
        if credit.owes { connection?.touch(self) }
    }

    // MARK: - for the connection

    /// The request changed (a head, bytes, its end): its connection looks at it in its next
    /// turn; between requests, the lease binds to one from the loop.
    private func requestChanged() {
        if let connection { connection.touch(self) } else { lookTask.schedule() }
    }

    /// Whether a request head or request bytes wait to be sent.
    var hasRequestBytes: Bool {
        hasPendingHead || !outputBuffer.buffer.isEmpty || (requestBodyEnded && outbound.phase == .untilEnd)
    }

    /// The request's unframed body ended (an HTTP/2 app's stream did): the stream ends once
    /// what was written of it is sent.
    func endRequestBody() {
        guard !closed, !dead, !requestAbandoned else { return }
        requestBodyEnded = true
        requestChanged()
    }

    /// What of the request has not gone to the codec yet: its body bytes, and 1 for its head
    /// while that waits (the count ``UpstreamConnection/sendHead(_:)`` returns for it).
    var unsentCount: Int { (hasPendingHead ? 1 : 0) + outputBuffer.buffer.count }

    /// The request's head, as `plan` makes it (the exchange's rewrite, written straight into
    /// the codec as name/value pairs): it opens a stream at the connection's next turn; the
    /// bytes written after it are framed as the plan says (``UpstreamRequestPlan/http2Body``).
    /// (Given once the stream announced its connect: a response never comes before it.)
    func sendHead(_ plan: consuming UpstreamRequestPlan) {
        guard !closed, !dead else { return }
        if requestAbandoned {
            // The last request's rest, dropped: this one starts clean.
            requestAbandoned = false
            outputBuffer.buffer.drain(outputBuffer.buffer.count)
        }
        pendingRequest = consume plan
        hasPendingHead = true
        // A new request: its end is yet to come (``endRequestBody()``, maybe before the lease
        // binds to a connection, which must not forget it).
        requestBodyEnded = false
        // Between requests the lease binds now, not from a task of its own (a head is there to
        // send; binding touches the connection, whose turn follows from the loop): one task
        // and one loop callback fewer a request.
        if connection == nil { bindIfNeeded() } else { requestChanged() }
    }

    /// Request body bytes waiting in the codec's send queue for the upstream's windows, as the
    /// connection last counted them: they are not written yet, so the write timeout runs while
    /// they wait (an upstream that holds its windows at zero would otherwise hold the request
    /// until the response timeout), and restarts as they go.
    private(set) var queuedInCodec = 0

    /// The connection counted `count` bytes of this stream's body in the codec's send queue
    /// (`progressed`: the request moved on since the last count).
    func countQueued(_ count: Int, progressed: Bool = false) {
        let moved = count < queuedInCodec
        // Bytes that went into the codec at once (a stream's first body goes with its HEADERS,
        // before nghttp2 opened the stream) start the clock as bytes waiting here would.
        let started = queuedInCodec == 0 && count > 0
        queuedInCodec = count
        if progressed || moved || started || count == 0 { restartWriteTimer() }
    }

    /// Whether the stream's send queue has room for more request body.
    func hasSendRoom(_ codec: HTTP2Codec) -> Bool {
        stream == 0 || codec.sendRoom(stream: stream, limit: HTTP2OutboundMessage.sendQueueLimit) > 0
    }

    /// Moves the request into `codec` (its head opens the stream) as far as the stream's send
    /// queue has room; the session hears its output drained once everything went.
    func sendRequest(_ codec: HTTP2Codec) throws {
        let request = outputBuffer.buffer
        // What waits in the codec is counted and the write timer restarted once, for all this
        // call moved (a head, body bytes), as it ends: a restart after each reads the clock and
        // updates the timer again within the same instant (three of them a unary call).
        var progressed = false
        defer {
            if stream > 0 { countQueued(codec.bufferedBody(stream: stream), progressed: progressed) } else if progressed { restartWriteTimer() }
        }
        if hasPendingHead {
            hasPendingHead = false
            // Dropped as soon as the codec took it (before the session hears of the drain, which
            // could hand over a next head).
            guard let plan = pendingRequest.take() else {
                assertionFailure("a lease's pending head has no plan")
                return
            }
            try outbound.submitRequest(plan, scheme: target.tls == nil ? "http" : "https", body: plan.http2Body, codec: codec)
            progressed = true
            if request.isEmpty && !requestBodyEnded {
                user?.streamDidDrain()
                return
            }
        }
        if requestBodyEnded && outbound.phase == .untilEnd { outbound.endMessage(trailers: nil) }
        let before = request.count
        guard before > 0 || (requestBodyEnded && outbound.phase == .untilEnd) else { return }
        try outbound.send(request, closed: false, codec: codec)
        if request.count != before { progressed = true }
        if request.isEmpty { user?.streamDidDrain() }
    }

    /// Response body bytes delivered and never reported taken (the lease leaves its stream: they
    /// go back to the connection's window).
    func takeUnreported() -> Int { credit.takeUnreported() }

    /// Response body bytes the session took since the last call (framing included, roughly:
    /// what is left in the input counts as body first).
    func takeConsumed() -> Int { credit.takeConsumed(left: inputBuffer.buffer.count) }

    /// Tells the session that response bytes arrived (while it reads).
    func deliver() {
        guard !closed, isReading, !inputBuffer.buffer.isEmpty || messageEnd != nil || !responseHeads.isEmpty, let user else { return }
        restartReadTimer()
        user.streamDidRead()
    }

    /// A response head (interim or final), kept typed for the exchange (``withNextResponseHead(_:)``,
    /// ``ResponseRewriter/response(http2:status:endStream:requestMethod:clientVersion:locateLines:reusing:lines:)``);
    /// `endStream`: nothing follows it (a gRPC trailers-only response).
    func receiveHead(_ head: consuming HTTP2Head, endStream: Bool) {
        guard !closed, let status = head.status else { return }
        if status >= 200 {
            bodyBeforeHead = false
            // A body without a length — the exchange calls it chunked, one that may end with
            // trailers — comes unframed, ended by the stream. A response to HEAD, a 204 or a
            // 304 has no body whatever it says (RFC 9110 §6.4.1).
            let noBody = ResponseHeadParser.hasNoContent(status: status, requestMethod: outbound.requestMethod)
            responseBody = noBody || endStream || head.hasField("content-length") ? .raw : .untilEnd
        }
        responseHeads.append(head)
        responseHeadEnds.append(endStream)
        connection?.touch(self)
    }

    /// A response head read after its stream closed, for the codec of the connection bound
    /// next (an empty head when there is none).
    private var spareResponseHead = HTTP2Head()
    /// Whether ``spareResponseHead`` holds one.
    private var hasSpareResponseHead = false

    /// The response heads not taken yet (interim ones, then the final one), in order; the
    /// body's bytes follow the final one in ``input``.
    private var responseHeads: [HTTP2Head] = []
    /// Whether each of ``responseHeads`` ended the stream.
    private var responseHeadEnds: [Bool] = []

    /// `body` called with the next response head, if one came (interim heads first), and
    /// whether it ended the stream; nil when there is none. The head's storage then goes back to
    /// the connection's codec for a next head (when the lease is still on a connection). (Lent,
    /// not returned: an optional head went through Optional's generic copy and destroy, some
    /// 1.5k instructions a gRPC call.)
    func withNextResponseHead<R>(_ body: (HTTP2Head, Bool) -> R) -> R? {
        guard !responseHeads.isEmpty else { return nil }
        let head: HTTP2Head, ended: Bool
        if responseHeads.count == 1 {
            head = responseHeads.removeLast()
            ended = responseHeadEnds.removeLast()
        } else {
            head = responseHeads.removeFirst()
            ended = responseHeadEnds.removeFirst()
        }
        let result = body(head, ended)
        if let connection {
            connection.recycle(head: consume head)
        } else {
            // The stream closed already (a gRPC answer, its trailers and the close come in one
            // read): the head goes to the next connection this lease binds to, not freed.
            // (Emptied, its storage kept only if small: an idle pooled lease may hold it long.)
            spareResponseHead = consume head
            spareResponseHead.makeSpare()
            hasSpareResponseHead = true
        }
        return result
    }

    /// Response body bytes; false when the lease is closed (the caller gives them back to the
    /// connection's window).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !closed else { return false }
        // (Decoded in the read that brings the final head, which is still an event then.)
        if responseBody == .awaitingHead { bodyBeforeHead = true }
        inputBuffer.buffer.append(bytes)
        credit.deliver(bytes.count)
        connection?.touch(self)
        return true
    }

    /// Body bytes came in the read that brought the final head, before the head was handed over
    /// (so a `.end` right after the head's event does not mean the head ended the stream).
    private(set) var bodyBeforeHead = false

    /// The response ended, with `trailers` or none. A body with a length has no place for
    /// trailers in HTTP/1.1: they are dropped.
    func receiveEnd(trailers: HTTPFields?) {
        guard !closed, !responseComplete else { return }
        responseComplete = true
        unauthenticatedTrailers = trailers.map(ResponseRewriter.isGRPCUnauthenticated(http2Trailers:)) ?? false
        if responseBody == .untilEnd { messageEnd = trailers ?? HTTPFields() }
        if outbound.phase == .done {
            // The exchange is over here: the lease leaves the stream at once (its END_STREAM may
            // still wait for the peer's window; that is the codec's), free for the next request.
            leaveStream()
        } else {
            // Answered before the request ended (RFC 9113 §8.1; a gRPC server answers once it
            // has the message, often before the END_STREAM behind it reached the sidecar): the
            // rest of the request is not sent. The stream is reset with NO_ERROR, which stops a
            // request whose response is complete, and the lease leaves it: its exchange may
            // release it for the next request (``Exchange/ResponseHeadFacts/upstreamIsStream``),
            // and what the session still writes of this request is dropped.
            abandonStream()
            deliver()
        }
    }

    /// Whether the response's body (one without a length) ends with the stream, unframed: the
    /// exchange relays it until ``takeMessageEnd()`` gives its end.
    var bodyEndsWithStream: Bool { responseBody == .untilEnd }

    /// The end of a body that ends with the stream, once the stream ended: its trailers (maybe
    /// none), given once; nil before.
    func takeMessageEnd() -> HTTPFields? {
        defer { messageEnd = nil }
        return messageEnd
    }

    /// Whether the last response's trailers said UNAUTHENTICATED (asked once: it is cleared).
    func takeUnauthenticatedTrailers() -> Bool {
        defer { unauthenticatedTrailers = false }
        return unauthenticatedTrailers
    }

    /// Its exchange is done and gives it back to the pool: a stream it is still on — the
    /// response's body came whole by its length and its END_STREAM has not yet, or the request
    /// was not all sent — is left now, reset with NO_ERROR (nothing failed, and nothing of it
    /// is wanted any more), what is left of the request dropped; so the next request opens a
    /// stream of its own and never inherits this one's bytes or end.
    func leaveFinishedStream() {
        guard let current = connection else { return }
        if outbound.stream > 0 && !(responseComplete && outbound.phase == .done) {
            abandonStream()
        } else {
            connection = nil
            current.detach(self, stream: outbound.stream)
        }
        dropPendingHead()
    }

    /// Leaves the stream, reset with NO_ERROR (nothing failed: its response is complete, or no
    /// longer wanted), and drops the rest of its request until the next request's head.
    private func abandonStream() {
        let current = connection
        connection = nil
        current?.cancel(self, stream: outbound.stream, code: .noError)
        requestAbandoned = true
        outputBuffer.buffer.drain(outputBuffer.buffer.count)
    }

    /// The stream closed (or was reset) after a complete response.
    func streamClosed() {
        if dead {
            let current = connection
            connection = nil
            current?.detach(self, stream: outbound.stream)
            deliver()
            return
        }
        leaveStream()
    }

    /// Leaves the stream of a complete exchange: bound to no connection, waiting for the next
    /// request; what the session has not read yet is delivered.
    private func leaveStream() {
        let current = connection
        connection = nil
        current?.detach(self, stream: outbound.stream)
        deliver()
    }

    /// The stream was reset (or refused) before its response ended: the session hears an end,
    /// a refusal (the request was not processed, and may go again elsewhere) as such.
    func streamFailed(_ code: HTTP2ErrorCode) {
        let current = connection
        connection = nil
        current?.detach(self, stream: outbound.stream)
        dead = true
        readTimer.suspend()
        guard !closed, let user else { return }
        wasRefused = code == .refusedStream
        user.stream(didEnd: wasRefused ? .refused : .endOfStream)
    }

    /// The last request's stream was refused unprocessed (REFUSED_STREAM, or above a GOAWAY's
    /// last stream).
    private(set) var wasRefused = false

    /// The connection ended or could not be made.
    func connectionEnded(_ reason: ConnectionEnd) {
        connection = nil
        if responseComplete && outbound.phase == .done { return }
        dead = true
        readTimer.suspend()
        guard !closed, let user else { return }
        user.stream(didEnd: reason)
    }

    /// Forgets a head not sent.
    private func dropPendingHead() {
        guard hasPendingHead else { return }
        hasPendingHead = false
        pendingRequest = nil
    }
}
