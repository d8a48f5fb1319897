import EventLoop
import HTTP1
import HTTP2

/// One HTTP/2 stream of an app's connection, as its ``HTTP2StreamSession`` sees it (``ClientEnd/http2(_:)``):
/// the session gets the request's head from the ``HTTP2ServerSession`` (checked and built by
/// ``HTTP2RequestHeadValidator``, ``HTTP2StreamSession/start(streamHead:)``), reads its body from
/// ``input`` (unframed, its end told apart: ``takeBodyEnd()``; or by its length), and gives its
/// response's head typed (``responseTranslator``) and its body to ``output``, which the
/// connection turns into frames. So every HTTP/2 request goes through the same routing, token
/// injection, pool, error responses, access log and metrics as an HTTP/1.1 one.
///
/// Not a byte stream: the session calls it directly and hears from it directly (``session``).
/// In memory, on its connection's loop. Its inactivity timeouts are the stream's own: the read
/// timeout runs while the session waits for request bytes the app has not ended, the write
/// timeout while response bytes wait for the app's window; either ends the stream for the
/// session as a timeout.
final class HTTP2StreamPipe: TouchablePipe {
    /// Listed in its connection's touched pipes.
    var isTouched = false
    /// In its connection's table of open streams (a look at it needs no lookup: stream ids
    /// are never reused on a connection).
    var isListed = false
    /// Its connection started the session serving it.
    var sessionStarted = false
    /// It closed (or the codec reset it) before its session started: the session never will.
    var droppedBeforeStart = false
    /// The stream's id on the app's connection.
    let stream: Int32
    /// The connection, while it is there (a session that outlives its connection, in a tunnel
    /// say, only writes into a closed pipe). Not a weak reference: a weak one costs about 45
    /// instructions a load, five per stream, and gives the connection a side table, which makes
    /// every release of it slow; its ``HTTP2ConnectionLoad`` says when it is gone instead.
    var owner: HTTP2ServerSession? { connectionLoad.connectionGone ? nil : connection.object }
    /// Read only through ``owner`` and ``withOwner(_:)``, which check the connection is there.
    private let connection: UnretainedReference<HTTP2ServerSession>

    /// Calls `body` with the connection, if it is there, without retaining it around the call
    /// (the pipe's calls to its connection, four or five per stream, each cost a retain and a
    /// release through ``owner``). The connection is alive while its load says it is not gone,
    /// and none of the calls made here closes it in place: they list the pipe for a turn (the
    /// current one, or one scheduled for later), queue a reset, or keep or give a buffer.
    @inline(__always)
    private func withOwner(_ body: (HTTP2ServerSession) -> Void) {
        guard !connectionLoad.connectionGone else { return }
        connection.with(body)
    }
    /// Shared with the connection: whether it is gone.
    private let connectionLoad: HTTP2ConnectionLoad
    let loop: EventLoop
    /// The session serving the stream, which hears its events; nil once the session closed it
    /// (which breaks the cycle: the session holds its pipe).
    var session: HTTP2StreamSession?
    private let inputBuffer: OwnedEventBuffer
    private let outputBuffer: OwnedEventBuffer
    /// The request as the session reads it.
    var input: EventBuffer { inputBuffer.buffer }
    /// The session's response: asking for it tells the connection to look at it. (Asked for
    /// several times per response: once listed, the connection's turn will look anyway, and
    /// the call to the connection is skipped.)
    var output: EventBuffer {
        if !sessionClosed && !isTouched { withOwner { $0.pipeTouched(self) } }
        return outputBuffer.buffer
    }
    /// The response bytes, for the connection (without scheduling a look).
    var response: EventBuffer { outputBuffer.buffer }
    /// The session wants requests bytes delivered.
    private(set) var isReading = false
    /// The session closed its side: nothing more is written to ``output``.
    private(set) var sessionClosed = false
    /// The session asked for a graceful close: the stream ends once the response is out.
    private(set) var closingAfterFlush = false
    private var flushed: (() -> Void)?
    /// The app ended its side or reset the stream.
    private(set) var peerEnded = false
    /// Request bytes written into ``input`` so far, and how many of them the session took.
    private var credit = StreamWindowCredit()
    /// The last look stopped because the stream's send queue was full (its session's response
    /// waits for the app to read).
    var waitingForRoom = false
    /// Listed in its connection's room waiters (until a turn looks at it there).
    var inRoomWaiters = false
    /// Bytes of the response (head and body, as HTTP/1.1) moved into the framing so far.
    var responseBytesMoved = 0
    /// The translated response's state.
    var responseTranslator: HTTP2MessageTranslator

    private var readTimeout: Duration?
    private var writeTimeout: Duration?
    /// Made when first armed: most streams (a request ended with its head, a response that
    /// fits the window) never arm either, and a timer is an allocation and a libevent event.
    private var readTimer: Timer?
    private var writeTimer: Timer?
    private var writeTimerRunning = false

    /// How the request's body follows its head (a streamed one goes into ``input`` unframed,
    /// its end told apart: ``takeBodyEnd()``).
    private var requestFraming: HTTP2RequestHeadValidator.Body

    /// A pipe for `stream`, whose request body is to be framed in its input as `framing` says
    /// (the head goes to the session directly, ``HTTP2StreamSession/start(streamHead:)``).
    init(stream: Int32, owner: HTTP2ServerSession, loop: EventLoop, requestMethod: String,
         framing: HTTP2RequestHeadValidator.Body) {
        self.stream = stream
        self.connection = UnretainedReference(owner)
        self.connectionLoad = owner.load
        self.loop = loop
        self.responseTranslator = HTTP2MessageTranslator(requestMethod: requestMethod, stream: stream)
        self.requestFraming = framing
        inputBuffer = owner.spareBuffer()
        outputBuffer = owner.spareBuffer()
    }

    // Its buffers serve the connection's next streams (two allocations and two frees fewer each).
    deinit {
        withOwner { owner in
            owner.giveBack(inputBuffer)
            owner.giveBack(outputBuffer)
        }
    }

    /// A timer that ends the stream as timed out.
    private func makeTimer() -> Timer {
        let timer = Timer(on: loop) {}
        timer.action = { [unowned self] in timedOut() }
        return timer
    }

    var isOpen: Bool { !sessionClosed }

    func startReading() {
        guard !sessionClosed else { return }
        isReading = true
        restartReadTimer()
        if !inputBuffer.buffer.isEmpty || peerEnded { withOwner { $0.pipeTouched(self) } }
    }

    func stopReading() {
        isReading = false
        readTimer?.suspend()
    }

    func setTimeouts(read: Duration?, write: Duration?) {
        readTimeout = read
        writeTimeout = write
        restartReadTimer()
        responseMoved()
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
        guard !sessionClosed else { return }
        if closingAfterFlush {
            // A graceful close whose last bytes the app never takes: given up, as a socket's
            // lingering close is (what is left is dropped; the stream is reset).
            let done = flushed
            end(reset: true)
            done?()
            return
        }
        session?.clientDidEnd(.timeout)
    }

    private func stopTimers() {
        readTimer?.cancel()
        writeTimer?.cancel()
    }

    /// The session closed the stream: what it wrote still goes out, then the stream ends (reset,
    /// if the response did not end it).
    func close() { end(reset: false) }

    private func end(reset: Bool) {
        guard !sessionClosed else { return }
        sessionClosed = true
        session = nil
        // The session's closing closure holds the session: dropped, or the two keep each other.
        flushed = nil
        stopTimers()
        withOwner { $0.pipeClosed(self, reset: reset) }
    }

    /// The session closes once its response is out: the stream ends with it, then `flushed` runs.
    func closeAfterFlush(flushed: (() -> Void)?) {
        guard !sessionClosed else {
            flushed?()
            return
        }
        closingAfterFlush = true
        self.flushed = flushed
        withOwner { $0.pipeTouched(self) }
    }

    // MARK: - for the connection

    /// Appends request body bytes from the app (a chunk when the body is chunked); false when
    /// the session is gone (the caller gives the bytes back to the connection's window at once).
    func receiveBody(_ bytes: [UInt8]) -> Bool {
        guard !sessionClosed else { return false }
        inputBuffer.buffer.append(bytes)
        credit.deliver(bytes.count)
        restartReadTimer()
        return true
    }

    /// The request body ended (with `trailers`, which a request's relay never forwards): a
    /// streamed body's end waits for its session to take it (``takeBodyEnd()``).
    func receiveEnd(trailers: HTTPFields) {
        guard !sessionClosed, requestFraming == .streamed else { return }
        bodyEndUntold = true
        requestFraming = .none
    }

    /// A streamed body's end arrived and its session has not taken it yet.
    private var bodyEndUntold = false

    /// Whether a streamed body ended since the last call: the session's relay completes once
    /// the bytes before the end have moved. Told once.
    func takeBodyEnd() -> Bool {
        defer { bodyEndUntold = false }
        return bodyEndUntold
    }

    /// The app ended its side of the stream or reset it.
    func peerDidEnd() {
        peerEnded = true
        readTimer?.suspend()
    }

    /// App bytes delivered and never reported as taken (the stream is closing: they go back
    /// to the connection's window).
    func takeUnreported() -> Int { credit.takeUnreported() }

    /// App bytes the session took since the last call (framing bytes excluded, approximately:
    /// what is left in the input is counted as app bytes first).
    func takeConsumed() -> Int { credit.takeConsumed(left: inputBuffer.buffer.count) }

    /// Tells the session what arrived: bytes (while it reads), or the stream's reset.
    func deliver() {
        guard !sessionClosed, let session else { return }
        if isReading && (!inputBuffer.buffer.isEmpty || bodyEndUntold) { session.clientDidRead() }
    }

    /// The app is gone (reset, connection closed): the session aborts.
    func deliverEnd() {
        guard !sessionClosed, let session else { return }
        session.clientDidEnd(.endOfStream)
    }

    /// The response went out as far as it was written: a waiting graceful close completes,
    /// and the session hears that its output drained.
    func responseDrained() {
        if closingAfterFlush && !sessionClosed {
            sessionClosed = true
            session = nil
            let done = flushed
            flushed = nil
            stopTimers()
            withOwner { $0.pipeClosed(self, reset: false) }
            done?()
            return
        }
        session?.clientDidDrain()
    }
}
