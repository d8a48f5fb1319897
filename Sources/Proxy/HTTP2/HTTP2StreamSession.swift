import EventLoop
import HTTP1
import HTTP2

/// Serves one stream of an app's HTTP/2 connection, and is that stream as the connection sees
/// it: one object per stream. Its request's head is checked and built by the connection
/// (``HTTP2RequestHeadValidator``) and given here typed (``start(streamHead:)``); its body
/// arrives in ``clientInput`` as the connection receives DATA (unframed, its end told apart:
/// ``takeRequestBodyEnd()``; or by its length); its response's head goes to the connection as
/// fields (``announceResponseHead(_:committed:)``) and its body from ``response`` as DATA. The
/// exchange runs as any other (``ExchangeSession``); nothing of an HTTP/1.1 connection's — head
/// reading, keep-alive, tunnels, interception, local answers — is made for a stream, and no
/// HTTP/1.1 text is written for one: its heads, the sidecar's own errors among them, go as
/// fields (``HTTP2OutboundMessage``).
///
/// In memory, on its connection's loop; owned by its ``HTTP2ServerSession`` while the stream
/// is open. Its inactivity timeouts are the stream's own: the read timeout runs while the
/// session waits for request bytes the app has not ended, the write timeout while response
/// bytes wait for the app's window; either ends the stream as a timeout.
final class HTTP2StreamSession: ExchangeSession, TouchablePipe {
    /// Listed in its connection's touched streams.
    var isTouched = false
    /// In its connection's table of open streams (a look at it needs no lookup: stream ids
    /// are never reused on a connection).
    var isListed = false
    /// Its connection started serving its request.
    var sessionStarted = false
    /// It closed (or the codec reset it) before it started: it never will.
    var droppedBeforeStart = false
    /// The stream's id on the app's connection.
    let stream: Int32
    /// The connection, while it is there (a session that outlives its connection only writes
    /// into a closed stream). Not a weak reference: a weak one costs about 45 instructions a
    /// load, five per stream, and gives the connection a side table, which makes every release
    /// of it slow; its ``HTTP2ConnectionLoad`` says when it is gone instead.
    var owner: HTTP2ServerSession? { connectionGone ? nil : connectionReference.object }
    /// Read only through ``owner`` and ``withOwner(_:)``, which check the connection is there.
    private let connectionReference: UnretainedReference<HTTP2ServerSession>

    /// Calls `body` with the connection, if it is there, without retaining it around the call
    /// (the stream's calls to its connection, four or five per stream, each cost a retain and
    /// a release through ``owner``). The connection is alive while its load says it is not
    /// gone, and none of the calls made here closes it in place: they list the stream for a
    /// turn (the current one, or one scheduled for later), queue a reset, or keep or give a
    /// buffer.
    @inline(__always)
    private func withOwner(_ body: (HTTP2ServerSession) -> Void) {
        guard !connectionGone else { return }
        connectionReference.with(body)
    }
    /// Whether the connection is gone, as the load it shares with it says (the session's
    /// ``ExchangeSession/http2Load``, set for every stream's: one reference, not a second).
    @inline(__always)
    private var connectionGone: Bool { http2Load?.connectionGone ?? true }
    private let inputBuffer: OwnedEventBuffer
    private let outputBuffer: OwnedEventBuffer
    /// The response's body bytes, for the connection (without scheduling a look).
    var response: EventBuffer { outputBuffer.buffer }
    /// The session wants request bytes delivered.
    private(set) var isReading = false
    /// The session closed the stream: nothing more is written to its response.
    private(set) var sessionClosed = false
    /// The session asked for a graceful close: the stream ends once the response is out.
    private(set) var closingAfterFlush = false
    private var flushed: (() -> Void)?
    /// The app ended its side or reset the stream.
    private(set) var peerEnded = false
    /// Request bytes written into the input so far, and how many of them the session took.
    private var credit = StreamWindowCredit()
    /// The last look stopped because the stream's send queue was full (its response waits for
    /// the app to read).
    var waitingForRoom = false
    /// Listed in its connection's room waiters (until a turn looks at it there).
    var inRoomWaiters = false
    /// Bytes of the response moved into the framing so far.
    var responseBytesMoved = 0
    /// The response's framing state: its head, announced as fields, then its body.
    var outbound: HTTP2OutboundMessage

    private var readTimeout: Duration?
    private var writeTimeout: Duration?
    /// Made when first armed: most streams (a request ended with its head, a response that
    /// fits the window) never arm either, and a timer is an allocation and a libevent event.
    private var readTimer: Timer?
    private var writeTimer: Timer?
    private var writeTimerRunning = false

    /// How the request's body follows its head (a streamed one goes into the input unframed,
    /// its end told apart: ``takeRequestBodyEnd()``).
    private var requestFraming: HTTP2RequestHeadValidator.Body
    /// A streamed body's end arrived and the exchange has not taken it yet.
    private var bodyEndUntold = false

    /// The session of `stream` on `owner`, whose request's body follows its head as `framing`
    /// says; `grpc`: the request is a gRPC call (its proxy-generated errors are gRPC-shaped).
    init(stream: Int32, owner: HTTP2ServerSession, context: WorkerContext, intercepted: InterceptedOrigin?,
         requestMethod: String, framing: HTTP2RequestHeadValidator.Body, grpc: Bool) {
        self.stream = stream
        self.connectionReference = UnretainedReference(owner)
        self.outbound = HTTP2OutboundMessage(requestMethod: requestMethod, stream: stream)
        self.requestFraming = framing
        inputBuffer = owner.spareBuffer()
        outputBuffer = owner.spareBuffer()
        super.init(appConnection: nil, context: context, intercepted: intercepted, load: owner.load, grpc: grpc)
    }

    // Its buffers serve the connection's next streams (two allocations and two frees fewer each).
    deinit {
        withOwner { owner in
            owner.giveBack(inputBuffer)
            owner.giveBack(outputBuffer)
        }
    }

    /// Serves the stream's request: its head, checked and built by the stream's connection, or
    /// what those checks refused (answered as a malformed HTTP/1.1 head is). Nothing is read
    /// from the stream but the body.
    func start(streamHead: Result<RequestHead, HTTPParseError>) {
        sessionStarted = true
        startClientReading()
        switch streamHead {
        case .success(let head):
            guard connection.headGiven() else {
                // (A new session always waits for its first request.)
                assertionFailure("an HTTP/2 stream's session was not waiting for its request")
                abort()
                return
            }
            begin(head)
        case .failure(let error):
            reject(error)
        }
    }

    // MARK: - the app's end, for the exchange

    override var streamInput: EventBuffer { inputBuffer.buffer }

    /// The response's body: asking for it tells the connection to look at it. (Asked for
    /// several times per response: once listed, the connection's turn will look anyway, and
    /// the call to the connection is skipped.)
    override var streamOutput: EventBuffer {
        if !sessionClosed && !isTouched { withOwner { $0.streamTouched(self) } }
        return outputBuffer.buffer
    }

    override func startStreamReading() {
        guard !sessionClosed else { return }
        isReading = true
        restartReadTimer()
        if !inputBuffer.buffer.isEmpty || peerEnded { withOwner { $0.streamTouched(self) } }
    }

    override func stopStreamReading() {
        isReading = false
        readTimer?.suspend()
    }

    override func setStreamTimeouts(read: Duration?, write: Duration?) {
        readTimeout = read
        writeTimeout = write
        restartReadTimer()
        responseMoved()
    }

    /// The session closed the stream at once: what it wrote still goes out, then the stream
    /// ends (reset, if the response did not end it).
    override func closeStream() { end(reset: false) }

    /// The session closes once its response is out: the stream ends with it, then `flushed` runs.
    override func closeStreamAfterFlush(_ flushed: @escaping () -> Void) {
        guard !sessionClosed else {
            flushed()
            return
        }
        closingAfterFlush = true
        self.flushed = flushed
        withOwner { $0.streamTouched(self) }
    }

    override func takeRequestBodyEnd() -> Bool {
        defer { bodyEndUntold = false }
        return bodyEndUntold
    }

    override func announceResponseHead(_ head: inout UpstreamResponse, committed: Bool) -> Bool {
        outbound.announce(Self.announcedHead(&head), committed: committed)
        return true
    }

    override func commitResponseHead() { outbound.commitAnnounced() }

    /// The error's head as fields, its body after it (none for a `HEAD`); nothing that only
    /// HTTP/1.1 has (`Connection: close`: the stream ends with the response).
    override func writeError(_ error: ProxyError, close: Bool, retryAfter: Int?) {
        clientOutput.append(outbound.announceError(error, retryAfter: retryAfter, grpc: isGRPCStream))
    }

    override func writeInterim(status: Int, reason: String) {
        outbound.announceInterim(status: status)
        withOwner { $0.streamTouched(self) }
    }

    override func dropResponseHead() { outbound.dropAnnounced() }

    override func endResponse(trailers: HTTPFields?) { outbound.endMessage(trailers: trailers) }

    /// Not when its connection has many streams open, or when the app never opened the stream's
    /// window beyond its first (``HTTP2ServerSession/appReadsBeyondFirstWindow(_:)``): an app
    /// whose streams stop reading would otherwise have every response written to disk.
    override var mayStartSpool: Bool {
        guard let connection = owner else { return true }
        return !connection.hasManyStreams && connection.appReadsBeyondFirstWindow(self)
    }

    /// A final response head as the stream's outbound message takes it: the forwarded lines (moved
    /// out) and Via, and how the body the relay writes after it is framed.
    private static func announcedHead(_ head: inout UpstreamResponse) -> HTTP2OutboundMessage.AnnouncedHead {
        var bytes: [UInt8] = []
        swap(&bytes, &head.forwardedLines)
        // (Moved out too: a copy would share storage with `head`, and the append copy it.)
        var lines: [FieldLine] = []
        swap(&lines, &head.keptLines)
        let via = bytes.count
        head.via.appendLine(to: &bytes)
        lines.append(FieldLine(name: via..<via + 3, value: via + 5..<bytes.count - 2))  // "Via", "<version> token-sidecar"
        // A chunked or close-delimited body goes unframed, ended by the session when the
        // exchange completes (``finish(_:upstream:keepClient:)``); else the backend's framing.
        let body = head.clientFraming == .chunked ? .untilEnd : HTTP2OutboundMessage.phase(for: head.framing)
        return HTTP2OutboundMessage.AnnouncedHead(status: head.status, bytes: bytes, lines: lines, body: body)
    }

    // MARK: - timeouts

    /// A timer that ends the stream as timed out.
    private func makeTimer() -> Timer {
        let timer = Timer(on: context.loop) {}
        timer.action = { [unowned self] in timedOut() }
        return timer
    }

    /// The read timeout runs while the session reads and the app has not ended its request.
    private func restartReadTimer() {
        if let readTimeout, isReading, !peerEnded, !sessionClosed {
            if readTimer == nil { readTimer = makeTimer() }
            readTimer?.schedule(after: readTimeout)
        } else {
            readTimer?.suspend()
        }
    }

    /// Response bytes moved toward the app (`moved`), or the connection looked at them: the
    /// write timeout runs from the last move while bytes wait (armed, not restarted, when
    /// nothing moved), and stops once none wait.
    func responseMoved(_ moved: Bool = true) {
        if let writeTimeout, !outputBuffer.buffer.isEmpty, !sessionClosed {
            guard moved || !writeTimerRunning else { return }
            if writeTimer == nil { writeTimer = makeTimer() }
            writeTimer?.schedule(after: writeTimeout)
            writeTimerRunning = true
        } else if writeTimerRunning {
            writeTimer?.suspend()
            writeTimerRunning = false
        }
    }

    private func timedOut() {
        guard sessionStarted, !sessionClosed else { return }
        if closingAfterFlush {
            // A graceful close whose last bytes the app never takes: given up, as a socket's
            // lingering close is (what is left is dropped; the stream is reset).
            let done = flushed
            end(reset: true)
            done?()
            return
        }
        clientDidEnd(.timeout)
    }

    private func stopTimers() {
        readTimer?.cancel()
        writeTimer?.cancel()
    }

    /// The session is done with the stream (`reset`: its response cannot end cleanly).
    private func end(reset: Bool) {
        guard !sessionClosed else { return }
        sessionClosed = true
        // The closing closure holds the session: dropped, or the two keep each other.
        flushed = nil
        stopTimers()
        withOwner { $0.streamEnded(self, reset: reset) }
    }

    // MARK: - for the connection

    /// Appends request body bytes from the app; false when the session is done with the stream
    /// (the caller gives the bytes back to the connection's window at once).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !sessionClosed else { return false }
        inputBuffer.buffer.append(bytes)
        credit.deliver(bytes.count)
        restartReadTimer()
        return true
    }

    /// The request body ended (with `trailers`, which a request's relay never forwards): a
    /// streamed body's end waits for the exchange to take it (``takeRequestBodyEnd()``).
    func receiveEnd(trailers: HTTPFields) {
        guard !sessionClosed, requestFraming == .streamed else { return }
        bodyEndUntold = true
        requestFraming = .none
    }

    /// The app ended its side of the stream or reset it.
    func peerDidEnd() {
        peerEnded = true
        readTimer?.suspend()
    }

    /// App bytes delivered and never reported as taken (the stream is closing: they go back
    /// to the connection's window).
    func takeUnreported() -> Int { credit.takeUnreported() }

    /// App bytes the session took since the last call.
    func takeConsumed() -> Int { credit.takeConsumed(left: inputBuffer.buffer.count) }

    /// Tells the exchange what arrived (while it reads).
    func deliver() {
        guard sessionStarted, !sessionClosed else { return }
        if isReading && (!inputBuffer.buffer.isEmpty || bodyEndUntold) { clientDidRead() }
    }

    /// The app is gone (reset, connection closed): the exchange hears it.
    func deliverEnd() {
        guard sessionStarted, !sessionClosed else { return }
        clientDidEnd(.endOfStream)
    }

    /// The response went out as far as it was written: a waiting graceful close completes,
    /// and the exchange hears that its output drained.
    func responseDrained() {
        if closingAfterFlush && !sessionClosed {
            sessionClosed = true
            let done = flushed
            flushed = nil
            stopTimers()
            withOwner { $0.streamEnded(self, reset: false) }
            done?()
            return
        }
        guard sessionStarted, !sessionClosed else { return }
        clientDidDrain()
    }
}
