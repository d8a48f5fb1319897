import EventLoop
import HTTP1
import HTTP2

/// An app's HTTP/2 connection (h2c with prior knowledge on the listener, or inside a plaintext
/// intercepted tunnel): the ``HTTP2Codec`` turns its bytes into streams, and each stream is
/// served by an ``HTTP2StreamSession`` of its own, one object per stream — the request's
/// head checked and built typed (``HTTP2RequestHeadValidator``), its body going in, the session's
/// response coming out as fields and DATA. Every stream is a request like any other: routed, its
/// token injected, counted and logged.
///
/// A stream's receive window opens only as its session takes the request body, and its
/// response moves into the codec only as the app's windows let it out, so a stream whose other
/// side does not read holds a bounded amount here and the session's watermarks slow its
/// upstream down, as for HTTP/1.1.
///
/// Confined to its worker's loop; owned by the ``WorkerContext`` until the connection closes.
final class HTTP2ServerSession: ConnectionDelegate {
    let client: any ByteStream
    let context: WorkerContext
    let intercepted: InterceptedOrigin?
    private let codec: HTTP2Codec
    /// Open streams, each its session.
    private var streams = StreamTable<HTTP2StreamSession>()
    /// Streams whose sessions start once the bytes they came in are decoded, in order: a stream
    /// the app resets in the same bytes (Rapid Reset writes both at once), or makes this side
    /// reset (MadeYouReset), never starts, so it costs no upstream request and no token.
    /// (Whether a stream's session started, or never will, is the session's: no set to look up.)
    private var pendingStarts: [PendingStart] = []
    /// A stream waiting for its session to start, with its head (or what refused it). (A struct,
    /// not a tuple: arrays of tuples are copied and destroyed through the runtime's generic
    /// tuple witnesses.)
    private struct PendingStart {
        let session: HTTP2StreamSession
        let head: Result<RequestHead, HTTPParseError>
    }
    /// What this connection may still do wrong before it is told to calm down.
    private var abuse = HTTP2AbuseGuard()
    /// Streams answered before their request ended: reset (`NO_ERROR`) once the answer is out
    /// (a reset queued earlier would overtake the answer's DATA).
    private var resetWhenSent: Set<Int32> = []
    /// Streams whose response or input changed since the last turn.
    private let touched = TouchedPipes<HTTP2StreamSession>()
    /// Runs a turn after the callbacks that touched streams, in the same loop iteration: the
    /// responses read from every upstream in one poll go out in one turn.
    private let turnTask: LoopTask
    /// Runs a turn in the next loop iteration, for what a turn leaves (after a poll).
    private let turnTimer: Timer
    private var turnScheduled = false
    /// Ends the connection once it has had no stream open for the idle timeout (armed by each
    /// turn that finds none, suspended by each that finds some). A timer, not the socket's read
    /// timeout: that was set anew at every turn where the number of open streams went to or
    /// from zero (an app with one stream at a time: twice per stream, each an `event_add`), where
    /// re-arming a timer whose pending expiry comes first touches nothing.
    private let idleTimer: Timer
    /// A turn is running, or about to run at the end of the current read: a session touched now
    /// is looked at by it.
    private var turning = false
    private var closed = false

    /// The first line of the client's connection preface and the empty line after it: what an
    /// HTTP/1.1 reader sees as a (malformed) head.
    static let prefaceStart = Array("PRI * HTTP/2.0\r\n\r\n".utf8)

    init(client: any ByteStream, context: WorkerContext, intercepted: InterceptedOrigin?) {
        self.client = client
        self.context = context
        self.intercepted = intercepted
        self.codec = HTTP2Codec(role: .server, blocks: context.http2Blocks)
        self.turnTask = LoopTask(on: context.loop) {}
        self.turnTimer = Timer(on: context.loop) {}
        self.idleTimer = Timer(on: context.loop) {}
        turnTask.action = { [unowned self] in turn() }
        turnTimer.action = { [unowned self] in turn() }
        idleTimer.action = { [unowned self] in idleTimedOut() }
        // DATA goes straight into its stream's input (no array per frame); a stream opened in
        // the same read is not in the table yet, and its DATA comes as events after its head.
        codec.dataSink = { [unowned self] id, bytes in
            // (One the session is done with comes as an event: its bytes go back to the window.)
            guard let session = streams[id], session.receiveBody(bytes) else { return false }
            mark(session)
            return true
        }
    }

    /// Takes over the connection, with what is already in its input.
    func start() {
        client.delegate = self
        // No read timeout (the idle timer ends a connection without streams), and the write
        // timeout an HTTP/1.1 app's connection has: an app that reads nothing of what waits for
        // its socket for `bodyIdle` is gone or hung, and its connection closes — its streams
        // each end by their own timer, but their resets cannot go out through a socket that
        // takes nothing, and the connection with its buffers would stay as long as the app.
        client.setTimeouts(read: nil, write: context.timeouts.bodyIdle)
        client.startReading()
        connectionDidRead(client)
    }

    // MARK: - the app's connection

    func connectionDidRead(_ connection: any ByteStream) {
        // (It ends with a turn.)
        let outer = turning
        turning = true
        defer { turning = outer }
        do {
            try HTTP2CodecIO.receive(client.input, codec: codec, while: { !closed }, handle: handle)
        } catch {
            fail(error)
            return
        }
        if calmAfter != nil {
            fail()
            return
        }
        if !pendingStarts.isEmpty {
            // What the bytes led to goes out first: a connection error in them (MadeYouReset's
            // frames are, for nghttp2 1.52) sends its GOAWAY, and the streams they opened are
            // not served.
            flushCodec()
            if codec.isTerminating {
                refuse(.protocolError, stream: nil)
                fail()
                return
            }
        }
        startPending()
        turn()
    }

    /// Starts the sessions of streams opened and still open, in order, as far as the worker's
    /// budget for this loop iteration allows (at most `limit`); the rest wait for a later one.
    func startPending(limit: Int = .max) {
        guard !closed else { return }
        // Streams that closed before they started leave the queue without a share of the budget.
        // (Looked for first: removing rebuilds the array, and there is rarely anything to remove.)
        if pendingStarts.contains(where: { $0.session.droppedBeforeStart }) {
            pendingStarts.removeAll { $0.session.droppedBeforeStart }
        }
        guard !pendingStarts.isEmpty else { return }
        let granted = context.http2Starts.take(min(limit, pendingStarts.count))
        if granted == pendingStarts.count {
            // The usual case: all of them, the arrays swapped (removing a prefix moves the rest).
            swap(&starting, &pendingStarts)
        } else {
            starting.append(contentsOf: pendingStarts.prefix(granted))
            pendingStarts.removeFirst(granted)
        }
        for entry in starting where !closed && !entry.session.droppedBeforeStart && !entry.session.sessionStarted {
            entry.session.start(streamHead: entry.head)
        }
        // (One at a time: `removeAll(keepingCapacity:)` destroyed them through the runtime's
        // generic array destroy.)
        while !starting.isEmpty { starting.removeLast() }
        if !pendingStarts.isEmpty && !closed { context.http2Starts.wait(self) }
    }

    /// The streams ``startPending(limit:)`` is starting (kept, with its capacity, for the next).
    private var starting: [PendingStart] = []

    func connectionDidDrain(_ connection: any ByteStream) {
        // Room in the socket's output matters only to frames the codec holds back (and the
        // streams waiting behind them): most drains follow a turn that sent everything. A
        // connection a turn's sends told to calm down (its GOAWAY went out) ends in the next.
        guard codec.wantsToSend || !touched.isEmpty || !roomWaiters.isEmpty || calmAfter != nil else { return }
        turn()
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        abort()
    }

    /// No stream was open for the idle timeout: the connection ends, as an idle HTTP/1.1 one
    /// does (as its socket's read timeout ended it before).
    private func idleTimedOut() {
        guard !closed, streams.isEmpty else { return }
        abort()
    }

    // MARK: - streams

    private func handle(_ events: consuming [HTTP2Event]) {
        // Most sends lead to no event (about four calls in five per stream): an empty list
        // holds no storage to give back, and is not worth the loop's setup.
        if events.isEmpty { return }
        handleEvents(events)
    }

    private func handleEvents(_ events: consuming [HTTP2Event]) {
        // The stream whose `.end` its `.head` took already (a request ended with its head).
        var endTaken: Int32 = 0
        events.withUnsafeMutableBufferPointer { events in
            for index in events.indices {
                switch HTTP2Event.take(events, at: index) {
                case .head(let id, let head):
                    let ended = index + 1 < events.count && events[index + 1].isEnd(of: id)
                    open(id, head, endStream: ended)
                    codec.recycle(head: head)
                    if ended { endTaken = id }
                case .data(let id, let bytes):
                    guard let session = streams[id], bytes.withUnsafeBytes({ session.receiveBody($0) }) else {
                        // No session, or it is done with the stream (an early answer): the bytes go
                        // back to the connection's window, or they would shrink it for good.
                        codec.consumed(stream: id, count: bytes.count)
                        codec.recycle(data: bytes)
                        continue
                    }
                    codec.recycle(data: bytes)
                    mark(session)
                case .trailers(let id, let fields):
                    guard let session = streams[id] else { continue }
                    session.receiveEnd(trailers: fields)
                    mark(session)
                case .end(let id):
                    // (A request ended with its head: its session began ended, with nothing to frame.)
                    guard id != endTaken, let session = streams[id] else { continue }
                    session.receiveEnd(trailers: HTTPFields())
                    session.peerDidEnd()
                    mark(session)
                case .reset(let id, _):
                    guard let session = streams[id] else { continue }
                    // Reset before its response began: what Rapid Reset does, by the thousand.
                    if session.outbound.phase == .head { refuse(.rapidReset, stream: id) }
                    session.peerDidEnd()
                    session.deliverEnd()
                case .malformed(let id):
                    refuse(.malformed, stream: id)
                case .provokedReset(let id):
                    // The codec resets it: if its session has not started, it never will.
                    if let session = streams[id], !session.sessionStarted { session.droppedBeforeStart = true }
                    refuse(.provokedReset, stream: id)
                case .refusedStream(let id):
                    refuse(.concurrentStreams, stream: id)
                case .emptyData(let id):
                    refuse(.emptyFrames, stream: id)
                case .ping:
                    // A ping after frames this side sent is a gRPC runtime's flow control (about one
                    // per call for grpc-go): counted only when nothing went out since the last one.
                    if !codec.takeMessageFrameSent() { refuse(.controlFrames, stream: nil) }
                case .settings:
                    refuse(.controlFrames, stream: nil)
                case .closed(let id, _):
                    streamClosed(id)
                case .headTooLarge(let id):
                    refuse(.headerList, stream: id)
                    answer(id, method: "GET", .headTooLarge("the request's header list is larger than \(codec.settings.maxHeaderListSize) bytes or \(codec.settings.maxHeaderFields) fields"))
                case .goAway, .settingsAcknowledged:
                    break
                }
            }
        }
        codec.recycle(events: events)
    }

    /// A request head arrived: a session of its own serves it.
    private func open(_ id: Int32, _ head: HTTP2Head, endStream: Bool) {
        if let calmAfter, id > calmAfter {
            // Read in the same bytes as the refusal that spent the budget, above the GOAWAY's
            // last stream: not processed, as the GOAWAY says.
            codec.reset(stream: id, .refusedStream)
            return
        }
        if context.http2Streams >= Self.workerStreamLimit && streams.count >= Self.streamsAlwaysTaken {
            // The worker serves as many streams as it takes: this one is refused unprocessed,
            // before any work on it (the app may send it again), so apps that never read hold a
            // bounded share. A connection's first few are still taken: apps that fill the worker
            // do not lock out another app's connection.
            codec.reset(stream: id, .refusedStream)
            refuse(.workerStreams, stream: id)
            load.refusedForWorkerLimit = true
            return
        }
        let grpc = Self.isGRPC(head)
        if let method = head.method, RequestHeadParser.isConnect(method) {
            refuseConnect(id, head)
            return
        }
        // Checked and built into a request head in one pass (what it refuses, the stream's
        // session answers as it answers a malformed HTTP/1.1 head).
        let request: Result<RequestHead, HTTPParseError>
        let body: HTTP2RequestHeadValidator.Body
        switch HTTP2RequestHeadValidator.validate(head, endStream: endStream, headLimit: context.requestHeadLimit,
                                                  maxFields: context.requestFieldLimit, reusing: context.takeHeadStorage(),
                                                  lastHost: &lastHost) {
        case .head(let built, let framing):
            // A gRPC call's route is looked up from the head's parsed authority (parsing the
            // `:authority` apart cost a call ~500 instructions).
            if grpc, sendsHTTP2Upstream(built.host, scheme: head.scheme) == false {
                refuseGRPC(id, head)
                return
            }
            request = .success(built)
            body = framing
        case .refused(let error):
            request = .failure(error)
            body = endStream ? .none : .streamed
        case .malformed:
            codec.reset(stream: id, .protocolError)
            refuse(.malformed, stream: id)
            return
        }
        let session = HTTP2StreamSession(stream: id, owner: self, context: context, intercepted: intercepted,
                                         requestMethod: head.method ?? "GET", framing: body, grpc: grpc)
        // A request ended with its head has no body to frame (none, or a length): its end is
        // taken here, not looked up again for the `.end` that follows.
        if endStream { session.peerDidEnd() }
        streams[id] = session
        load.openStreams = streams.count
        session.isListed = true
        context.http2Streams += 1
        pendingStarts.append(PendingStart(session: session, head: request))
    }

    /// The `Host` of this connection's last request head: the next one with the same bytes
    /// takes its authority without parsing them again (an app's streams name one host; one
    /// that alternates hosts parses each, and makes this anew each time).
    private var lastHost: ParsedHost?

    /// Most streams one worker serves at once, over all its apps' connections (each connection
    /// takes at most ``HTTP2Settings/maxConcurrentStreams``): beyond, streams are refused with
    /// `REFUSED_STREAM`. 50 connections × 100 streams that never read would otherwise each hold
    /// a session, its buffers and an upstream request.
    static let workerStreamLimit = 1024
    /// Streams a connection may always have open, the worker at its limit or not.
    static let streamsAlwaysTaken = 4

    /// Whether this connection has more streams open than ``streamsAlwaysTaken``, or asked for
    /// more than the full worker took: its streams queue for upstream connections behind other
    /// clients' requests. (Held to 4 by a full worker, 40 connections of the no-read attack
    /// counted as other clients: their 160 streams took upstream connections back from stalled
    /// ones at once, a megabyte read after another, while a canary waited.)
    var hasManyStreams: Bool { load.hasManyStreams }
    /// How many streams it has open and whether one was refused for the worker's limit, as its
    /// streams' sessions see it (kept current where ``streams`` changes).
    let load = HTTP2ConnectionLoad()

    // First, before anything it holds goes: a session that asks for its connection from now on
    // (its deinit, a session that outlives the connection) finds none.
    deinit { load.connectionGone = true }

    /// Whether the app has taken more of `session`'s response than its stream's first window
    /// (and a head's worth, ``headSlack``): it opened the window, so it reads the stream. One
    /// that never did may never read at all, and spooling its response would only move it to
    /// disk for nobody.
    func appReadsBeyondFirstWindow(_ session: HTTP2StreamSession) -> Bool {
        session.responseBytesMoved > codec.peerInitialWindowSize + Self.headSlack
    }

    /// What a response head may add to the bytes moved into the framing beyond the window
    /// (``appReadsBeyondFirstWindow(_:)``).
    static let headSlack = 64 * 1024

    /// Whether a request for `host` (a checked head's `Host`; `scheme`: its `:scheme`) goes to a
    /// route whose upstream speaks HTTP/2 (inside a tunnel: the tunnel's route; a request for
    /// another host there is answered 421 by its session); nil when no route covers it (its
    /// session refuses it as any other).
    private func sendsHTTP2Upstream(_ host: Authority?, scheme: String?) -> Bool? {
        if let intercepted {
            return context.router.sendsHTTP2(Authority(host: intercepted.host, port: intercepted.port), defaultPort: 443)
        }
        guard let host else { return nil }
        return context.router.sendsHTTP2(host, defaultPort: scheme == "https" ? 443 : 80)
    }

    /// A gRPC call (`content-type: application/grpc`, `+proto`, `;…`; not gRPC-Web, which is
    /// made for HTTP/1.1).
    static func isGRPC(_ head: HTTP2Head) -> Bool {
        // Read in place: a String of the value (16 bytes or more: an allocation) and a lowercased
        // copy of it cost a gRPC call ~1k instructions.
        head.withFirstField("content-type") { type in
            let base = grpcType.utf8CodeUnitCount
            guard type.count >= base, HTTP2Codec.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: type[0..<base]), grpcType) else {
                return false
            }
            return type.count == base || type[base] == UInt8(ascii: "+") || type[base] == UInt8(ascii: ";")
        } ?? false
    }

    /// gRPC's content type, and the start of its `+format` and `;parameter` variants.
    private static let grpcType: StaticString = "application/grpc"

    /// gRPC needs HTTP/2 end to end (its trailers carry the call's status), and the route's
    /// upstream speaks HTTP/1.1: the call fails closed, as gRPC expects a failure to look — HTTP 200,
    /// trailers-only, `grpc-status: 14` (UNAVAILABLE) and a message — never half-translated.
    /// Nothing goes upstream and no token is looked up.
    private func refuseGRPC(_ id: Int32, _ head: HTTP2Head) {
        context.logger.warning("a gRPC call was refused: the route's upstream speaks HTTP/1.1 (set upstreamProtocol: h2 or h2c)",
                               metadata: ["authority": "\(head.authority ?? "")"])
        answer(id, method: head.method ?? "POST", grpc: true,
               ProxyError(status: 502, type: "http_protocol_error",
                          message: "the route's upstream speaks HTTP/1.1; a gRPC call needs HTTP/2 end to end (upstreamProtocol: h2 or h2c)"))
    }

    /// A `CONNECT` stream (RFC 9113 §8.5): refused as over HTTP/1.1 where that would be (`connect:`
    /// policy), else `501`: a tunnel over an HTTP/2 stream is not offered (an app sends its
    /// `CONNECT` over HTTP/1.1).
    private func refuseConnect(_ id: Int32, _ head: HTTP2Head) {
        let error: ProxyError
        if let text = head.authority, let authority = Authority.parse(text[...]),
           case .failure(let refusal) = context.router.tunnelDecision(for: authority) {
            error = refusal
        } else {
            error = ProxyError(status: 501, type: "http_protocol_error",
                               message: "CONNECT over HTTP/2 is not supported; send it over HTTP/1.1")
        }
        answer(id, method: "CONNECT", error)
    }

    /// Answers `stream` with the proxy's own error response (the same status, fields and body an
    /// HTTP/1.1 app gets), without a session; the app's request body is not wanted.
    private func answer(_ id: Int32, method: String, grpc: Bool = false, _ error: ProxyError) {
        var message = HTTP2OutboundMessage(requestMethod: method, stream: id)
        let bytes = OwnedEventBuffer()
        bytes.buffer.append(message.announceError(error, retryAfter: nil, grpc: grpc))
        do {
            try message.send(bytes.buffer, closed: true, codec: codec)
            resetWhenSent.insert(id)
        } catch {
            codec.reset(stream: id, .internalError)
        }
    }

    /// The GOAWAY's last stream once a budget is spent: streams above it are refused, even one
    /// read in the same bytes. Once the bytes being decoded are, the GOAWAY goes out and the
    /// connection closes, its open streams with it (as nginx, HAProxy and Envoy end a flooding
    /// client's connection: left open, an attacker's streams would hold it until their timeouts).
    private var calmAfter: Int32?

    /// Counts `reason` (on `stream`, if it is about one) against the connection's budgets:
    /// counted in `token_sidecar_http2_refused_total`, the first logged, and past a budget the app
    /// is told `ENHANCE_YOUR_CALM` and the connection ends.
    private func refuse(_ reason: HTTP2Refusal, stream: Int32?) {
        let action = abuse.record(reason, now: Timer.monotonicNow())
        guard action != .pass else { return }
        context.metrics.http2Refused[reason.rawValue, default: 0] += 1
        switch action {
        case .pass, .count:
            break
        case .countAndLog:
            context.logger.warning("an HTTP/2 app's connection was refused something (logged once per connection)",
                                   metadata: ["reason": "\(reason.rawValue)"])
        case .calm:
            context.logger.warning("an HTTP/2 app went past a limit; its connection takes no new streams (GOAWAY ENHANCE_YOUR_CALM)",
                                   metadata: ["reason": "\(reason.rawValue)"])
            let last = min(stream ?? codec.lastPeerStream, codec.lastPeerStream)
            calmAfter = last
            codec.goAway(.enhanceYourCalm, lastStream: last)
        }
    }

    private func streamClosed(_ id: Int32) {
        if !resetWhenSent.isEmpty { resetWhenSent.remove(id) }
        guard let entry = streams.removeValue(forKey: id) else { return }
        load.openStreams = streams.count
        entry.isListed = false
        context.http2Streams -= 1
        if !entry.sessionStarted {
            // Reset in the bytes that opened it: its session never starts (and leaves the queue
            // at the next start).
            entry.droppedBeforeStart = true
            codec.consumed(stream: id, count: entry.takeUnreported())
            return
        }
        // What the app sent that the session never took goes back to the connection's window.
        codec.consumed(stream: id, count: entry.takeUnreported())
        // The app reset the stream (or the codec refused it) before the session finished.
        abandon(entry)
    }

    /// The app is gone from a stream whose session may still be serving it: the session hears
    /// the end (and aborts, if hearing it did not close it).
    private func abandon(_ entry: HTTP2StreamSession) {
        guard !entry.sessionClosed else { return }
        entry.peerDidEnd()
        entry.deliverEnd()
        if !entry.sessionClosed { entry.abort() }
    }

    // MARK: - from the streams' sessions

    /// Buffers of streams that ended, for the next streams' streams (at most ``spareBufferLimit``).
    private var spareBuffers = SpareList<OwnedEventBuffer>(limit: HTTP2ServerSession.spareBufferLimit)
    /// The buffers a connection keeps for its next streams: enough for 64 streams at a time (a
    /// gRPC app keeps 50 calls in flight on one connection; with 16 streams' worth, a buffer in
    /// three was made and freed anew). Kept empty, a buffer is about 150 bytes (128: ~20 KiB);
    /// an idle connection keeps two.
    static let spareBufferLimit = 128

    /// An empty buffer for a new stream's session: one a closed stream left, or a new one.
    func spareBuffer() -> OwnedEventBuffer {
        spareBuffers.take() ?? OwnedEventBuffer()
    }

    /// A closed stream's session gives its buffer back (emptied here; kept if there is room).
    func giveBack(_ buffer: OwnedEventBuffer) {
        guard !closed, !spareBuffers.isFull else { return }
        buffer.buffer.drain(buffer.buffer.count)
        spareBuffers.keep(buffer)
    }

    /// Trims the spares once the connection has had no stream open for ``idleTrimDelay``
    /// (made when first needed). Not at once: an app's batches of streams leave the connection
    /// without any between them, and the next batch would make them all again.
    private var spareTrimTimer: Timer?

    private func scheduleSpareTrim() {
        let timer = spareTrimTimer ?? Timer(on: context.loop) {}
        if spareTrimTimer == nil {
            timer.action = { [unowned self] in trimSparesIfIdle() }
            spareTrimTimer = timer
        }
        timer.schedule(after: Self.idleTrimDelay)
    }

    /// Still no stream open: at most ``idleSpareLimit`` buffers (and what the codec keeps, as
    /// few) stay for the next streams.
    private func trimSparesIfIdle() {
        guard !closed, streams.isEmpty else { return }
        spareBuffers.trim(to: Self.idleSpareLimit)
        codec.trimSpares(to: Self.idleSpareLimit)
    }

    /// Spares an idle connection keeps of each kind: a stream's worth (its session's two buffers).
    static let idleSpareLimit = 2
    /// How long a connection stays without a stream before its spares are trimmed.
    static let idleTrimDelay: Duration = .seconds(1)

    /// A stream's session wrote, read or closed: look at it in this loop iteration's turn.
    func streamTouched(_ session: HTTP2StreamSession) {
        mark(session)
    }

    /// A stream's session is done with it: its response ends (or the stream is reset).
    func streamEnded(_ session: HTTP2StreamSession, reset: Bool) {
        if reset {
            codec.reset(stream: session.stream, .internalError)
        }
        mark(session)
    }

    private func mark(_ session: HTTP2StreamSession) {
        touched.append(session)
        guard !turnScheduled, !turning, !closed else { return }
        turnScheduled = true
        turnTask.schedule()
    }

    /// Moves responses into the codec, reopens windows for what sessions took, delivers
    /// request bytes, and writes the codec's frames to the app.
    private func turn() {
        turnScheduled = false
        guard !closed else { return }
        let outer = turning
        turning = true
        defer { turning = outer }
        if calmAfter != nil {
            fail()
            return
        }
        // Each pass may touch more streams (a delivery makes a session write): bounded passes.
        touched.drain(passes: 8, look: service, afterPass: flushCodec)
        flushCodec()
        if !resetWhenSent.isEmpty {
            for id in resetWhenSent where !codec.isSendingBody(stream: id) {
                resetWhenSent.remove(id)
                codec.reset(stream: id, .noError)
            }
            flushCodec()
        }
        // Streams whose send queue had no room for their session's response may go on.
        if !roomWaiters.isEmpty { lookAtRoomWaiters() }
        // An idle connection (no stream open) ends after the idle timeout, as an HTTP/1.1 one,
        // and if it stays idle a while keeps only a few spares for its next streams (a burst's
        // worth could be tens of KiB on each of a thousand idle connections).
        if streams.isEmpty {
            idleTimer.schedule(after: context.timeouts.idle)
        } else {
            idleTimer.suspend()
        }
        if streams.isEmpty && (spareBuffers.count > Self.idleSpareLimit || codec.spareCount > Self.idleSpareLimit) {
            scheduleSpareTrim()
        }
        if !touched.isEmpty && !turnScheduled {
            turnScheduled = true
            turnTimer.schedule(after: .zero)
        }
        if !codec.isActive { close() }
    }

    /// Streams whose last look stopped for want of room in their send queue (each listed once:
    /// its ``HTTP2StreamSession/inRoomWaiters`` mark), so a turn looks at these, not at every
    /// open stream.
    private var roomWaiters: [HTTP2StreamSession] = []

    /// Touches the waiting streams whose stream has room now (their look lists them again if it
    /// stops short once more); forgets those no longer waiting, or whose stream closed.
    private func lookAtRoomWaiters() {
        roomWaiters.removeAll { session in
            if session.waitingForRoom && session.isListed {
                guard codec.sendRoom(stream: session.stream, limit: HTTP2OutboundMessage.sendQueueLimit) > 0 else { return false }
                touched.append(session)
            }
            session.inRoomWaiters = false
            return true
        }
    }

    private func service(_ session: HTTP2StreamSession) {
        guard session.isListed else { return }
        session.deliver()
        let consumed = session.takeConsumed()
        if consumed > 0 { codec.consumed(stream: session.stream, count: consumed) }
        let before = session.response.count
        do {
            try session.outbound.send(session.response, closed: session.sessionClosed || session.closingAfterFlush,
                                                  codec: codec)
        } catch {
            context.logger.debug("HTTP/2 stream response could not be translated", metadata: ["stream": "\(session.stream)"])
            codec.reset(stream: session.stream, .internalError)
            session.response.drain(session.response.count)
        }
        if var spent = session.outbound.takeSpentHead() {
            context.giveBack(streamHead: spent.takeBytes(), lines: spent.takeLines())
        }
        let after = session.response.count
        if after < before { session.responseBytesMoved += before - after }
        session.responseMoved(after != before)
        let waiting = after > 0 && codec.sendRoom(stream: session.stream, limit: HTTP2OutboundMessage.sendQueueLimit) <= 0
        session.waitingForRoom = waiting
        if waiting && !session.inRoomWaiters {
            session.inRoomWaiters = true
            roomWaiters.append(session)
        }
        // A session that closed at once (an abort) leaves nothing more to send: what its
        // response lacks cannot come, so the stream is reset (a socket closed at once drops its
        // unsent bytes too). One closing gracefully is waited for while its bytes move.
        let truncated = session.sessionClosed
            || (session.closingAfterFlush && !session.waitingForRoom && (after == 0 || after == before))
        if truncated && session.outbound.phase != .done {
            // The session ended without a complete response (an upstream that died mid-body,
            // maybe mid-chunk-line): the stream cannot end cleanly.
            codec.reset(stream: session.stream, .internalError)
            session.response.drain(after)
            session.responseDrained()
            return
        }
        if after == 0 && (before > 0 || session.closingAfterFlush) { session.responseDrained() }
        if session.outbound.phase == .done && !session.peerEnded {
            // The response is complete before the request: once it is out, the app is told to
            // stop sending (RFC 9113 §8.1).
            session.peerDidEnd()
            resetWhenSent.insert(session.stream)
        }
    }

    /// What may wait in the app's socket output: frames beyond it stay in the codec (and the
    /// responses behind them in their sessions' outputs) until the app reads.
    static let outputLimit = 256 * 1024

    /// Sends the PING answers the codec holds if no frames took them in time.
    private lazy var pingAnswers = PingAnswerClock(loop: context.loop) { [unowned self] in
        codec.releasePingAnswers()
        flushCodec()
    }

    private func flushCodec() {
        do {
            handle(try HTTP2CodecIO.send(codec, to: client, limit: Self.outputLimit))
        } catch {
            fail()
            return
        }
        pingAnswers.follow(holding: codec.holdsPingAnswers)
    }

    // MARK: - ends

    /// A protocol error: what the codec queued (its GOAWAY) goes out, then the connection closes.
    /// For a flood (answers piling up unread, or endless CONTINUATION frames) nghttp2 queues no
    /// GOAWAY: one saying `ENHANCE_YOUR_CALM` goes out after what it queued.
    private func fail(_ error: HTTP2CodecError? = nil) {
        if let error {
            context.logger.debug("HTTP/2 connection failed", metadata: ["error": "\(error)"])
            let reason: HTTP2Refusal = error.isFlood ? .outboundFlood : error.isContinuationFlood ? .continuationFlood : .protocolError
            refuse(reason, stream: nil)
        }
        _ = try? codec.send { bytes in client.output.append(bytes) }
        if let error, error.isFlood || error.isContinuationFlood {
            client.output.append(HTTP2Codec.goAwayFrame(lastStream: codec.lastPeerStream, .enhanceYourCalm))
        }
        // Frames already on their way are read and dropped while the GOAWAY goes out; a flood
        // that goes on is not (the settings flood kept a worker reading 1.5 GB/s for the 2 s
        // linger of each connection).
        client.limitLingeringDiscard(to: Self.failedLingerDiscard)
        close()
    }

    /// What a connection ended for an error or a flood may still send while it lingers.
    static let failedLingerDiscard = 256 * 1024

    /// Closes after the last frames are out.
    private func close() {
        guard !closed else { return }
        closed = true
        abortStreams()
        turnTask.cancel()
        turnTimer.cancel()
        idleTimer.cancel()
        pingAnswers.cancel()
        spareTrimTimer?.cancel()
        client.closeAfterFlush { [self] in context.removeHTTP2(self) }
    }

    /// The app's connection ended: every stream's session aborts. One closing gracefully (its
    /// last frames still going out) closes at once: the worker is closing everything, and the
    /// close's flush callback, which takes it off the worker, held it (and through it the worker's
    /// context) until bytes a stopped loop never sends were sent.
    func abort() {
        guard !closed else {
            client.close()
            return
        }
        closed = true
        abortStreams()
        turnTask.cancel()
        turnTimer.cancel()
        idleTimer.cancel()
        pingAnswers.cancel()
        spareTrimTimer?.cancel()
        client.close()
        context.removeHTTP2(self)
    }

    private func abortStreams() {
        let open = streams
        streams.removeAll()
        load.connectionClosed()
        pendingStarts.removeAll()
        roomWaiters.removeAll()
        context.http2Streams -= open.count
        for (_, entry) in open { entry.isListed = false }
        for (_, entry) in open where entry.sessionStarted { abandon(entry) }
    }

    /// Sends GOAWAY for a drain: the open streams finish, no new one starts.
    func drain() {
        guard !closed else { return }
        codec.goAway(.noError)
        turn()
    }
}
