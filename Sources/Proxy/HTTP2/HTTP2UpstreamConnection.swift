import EventLoop
import Glibc
import HTTP1
import HTTP2

/// One HTTP/2 connection to an upstream, shared by the ``HTTP2UpstreamLease``s whose requests
/// it carries: the ``HTTP2Codec`` (client side) over a socket the ``UpstreamPool`` dialled
/// (over TLS, only if the upstream agreed to `h2` in ALPN).
///
/// Response frames go to their stream's lease typed (heads, body bytes, trailers); a stream's
/// receive window opens only as its session takes the bytes, so a slow app slows only its own
/// stream. A `GOAWAY` stops new
/// streams here (the streams it did not process are refused, and their exchanges retried on
/// another connection); a socket that ends fails the streams still open.
///
/// Confined to its worker's loop; kept by ``HTTP2Upstreams`` (and by the leases bound to it)
/// until it closes.
final class HTTP2UpstreamConnection: UpstreamConnectionOwner, ConnectionDelegate {
    let target: UpstreamTarget
    private unowned let upstreams: HTTP2Upstreams
    /// The connection's receive window covers every stream's (each stream's is its own bound:
    /// 256 KiB), so that apps that stop reading hold only their own streams, not the others.
    private let codec: HTTP2Codec
    /// The socket once dialled and handed over.
    private var socket: (any ByteStream)?
    /// The pool's connection while it dials.
    private var dialing: UpstreamConnection?
    /// Pipes whose request is on a stream here, by stream id.
    private var streams = StreamTable<HTTP2UpstreamLease>()
    /// Pipes bound here whose request has not opened its stream yet (the connection is still
    /// being dialled, or their head is not complete).
    private var bound: [HTTP2UpstreamLease] = []
    /// Pipes to look at in the next turn.
    private let touched = TouchedPipes<HTTP2UpstreamLease>()
    /// Streams whose request bytes wait for room in their send queue (a turn looks at these,
    /// not at every open stream: a turn per event of 50 calls in flight went over all 50 twice).
    /// An entry whose stream is no longer its lease's is dropped when met.
    private var waitingForRoom: [(id: Int32, lease: HTTP2UpstreamLease)] = []
    /// Streams with request body in the codec's send queue, whose write timeout restarts as it
    /// goes out.
    private var queuedBodies: [(id: Int32, lease: HTTP2UpstreamLease)] = []
    /// Runs a turn after the callbacks that touched leases, in the same loop iteration: a request
    /// an exchange hands its lease goes out before the loop polls again (a zero-delay timer made
    /// each request wait one more iteration, an `epoll_wait` and a clock read).
    private let turnTask: LoopTask
    /// Runs a turn in the next loop iteration, for what a turn leaves (after a poll).
    private let turnTimer: Timer
    private var turnScheduled = false
    /// A turn is running: a lease touched now is looked at by it, or by the turn it leaves.
    private var turning = false
    /// The peer sent `GOAWAY` (or never acknowledged the `SETTINGS`): no new stream starts here.
    private(set) var goingAway = false
    /// Runs out if the upstream does not acknowledge this side's `SETTINGS` in time (RFC 9113
    /// §6.5.3): an upstream that does not is broken or hostile, and until it does it may hold
    /// this side to defaults it never agreed to (windows, push). The streams open finish; no new
    /// one starts here, and the connection closes with `SETTINGS_TIMEOUT` once they are done.
    private var settingsTimer: Timer?
    private(set) var isClosed = false

    /// Most streams opened at once on one connection, whatever the peer allows.
    static let maxStreams = 128
    /// Stream ids past this one are not used: the connection takes no new stream (RFC 9113
    /// §5.1.1 ends them at 2^31-1), and another opens.
    static let lastStreamID: Int32 = 0x7FFF_0000
    /// What may wait in the socket's output: frames beyond it stay in the codec.
    static let outputLimit = 256 * 1024

    init(target: UpstreamTarget, upstreams: HTTP2Upstreams) {
        self.target = target
        self.upstreams = upstreams
        codec = HTTP2Codec(role: .client, settings: HTTP2Settings(streamWindow: 256 * 1024, connectionWindow: Self.maxStreams * 256 * 1024),
                           blocks: upstreams.blocks)
        turnTask = LoopTask(on: upstreams.loop) {}
        turnTimer = Timer(on: upstreams.loop) {}
        turnTask.action = { [unowned self] in turn() }
        turnTimer.action = { [unowned self] in turn() }
        // A response's DATA goes straight into its lease's input (no array per frame), also in
        // the read that brings its head (a gRPC answer's HEADERS, DATA and trailers come in one):
        // the lease notes it, so that `handle` does not read the head's event followed by the
        // end's as a head that ended its stream (nghttp2 refuses DATA before a final head).
        codec.dataSink = { [unowned self] id, bytes in
            guard let lease = streams[id] else { return false }
            return lease.receiveBody(bytes)
        }
    }

    /// Whether it is ready for streams (dialled, not going away).
    var isReady: Bool { socket != nil && !goingAway && !isClosed }

    /// Whether one more exchange may be bound here.
    var hasRoom: Bool {
        guard !goingAway, !isClosed, streams.count + bound.count < streamLimit else { return false }
        guard let limit = upstreams.requestLimit(key: target.poolKey) else { return true }
        return opened + bound.count < limit
    }

    /// Streams opened here so far.
    private var opened = 0

    /// Whether the upstream's `SETTINGS` came (its `SETTINGS_MAX_CONCURRENT_STREAMS` known).
    private var peerSettingsCame = false

    /// How many streams may be open here at once: what the upstream's `SETTINGS` allow, at most
    /// ``maxStreams``. Until they come, what the last connection to the same upstream was told
    /// (nghttp2 assumes 100): a new connection opened because the others were at an upstream's
    /// limit of, say, 1 would otherwise take every waiting request at once, and all but one of
    /// their streams would be refused (`REFUSED_STREAM`) when its `SETTINGS` came. (At least
    /// one: an upstream that said 0 for a while would otherwise make each request dial anew.)
    private var streamLimit: Int {
        var limit = min(codec.peerMaxConcurrentStreams, Self.maxStreams)
        if !peerSettingsCame, let learned = upstreams.streamLimit(key: target.poolKey) { limit = min(limit, max(learned, 1)) }
        return limit
    }

    // MARK: - dialling

    /// The socket's own target: the same host, port and TLS, spoken to as bytes.
    var dialTarget: UpstreamTarget {
        UpstreamTarget(host: target.host, port: target.port, tls: target.tls, poolKey: target.poolKey + "|socket",
                       allowsLinkLocal: target.allowsLinkLocal)
    }

    /// Dials through `pool` (resolution, address race, TLS, the connect timeout).
    func dial(through pool: UpstreamPool) {
        let upstream = pool.acquireFresh(dialTarget)
        upstream.owner = self
        dialing = upstream
    }

    func upstreamDidConnect(_ upstream: UpstreamConnection) {
        dialing = nil
        if target.tls != nil, upstream.connection?.tlsApplicationProtocol != "h2" {
            upstream.close()
            upstreams.refusedHTTP2(key: target.poolKey)
            close(.tlsProtocol(message: "the upstream did not agree to HTTP/2 in ALPN (upstreamProtocol: h2, or a gRPC call)"))
            return
        }
        guard let stream = upstream.handOver() else {
            close(.endOfStream)
            return
        }
        start(stream)
    }

    /// Goes on over `stream`, connected (and, over TLS, agreed on `h2`).
    func start(_ stream: any ByteStream) {
        socket = stream
        let timer = Timer(on: upstreams.loop) {}
        timer.action = { [unowned self] in settingsTimedOut() }
        timer.schedule(after: upstreams.settingsTimeout)
        settingsTimer = timer
        stream.delegate = self
        stream.setTimeouts(read: nil, write: nil)
        stream.startReading()
        let waiting = bound
        for lease in waiting { lease.connectionReady() }
        for lease in waiting { touched.append(lease) }
        turn()
    }

    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) {
        dialing = nil
        switch reason {
        case .connection(let end): close(end)
        case .connectTimeout: close(.timeout)
        case .prohibitedDestination: close(.dnsFailure(message: "every address of the upstream is prohibited"))
        case .streamRefused: close(.refused)  // (a socket's dial reports no stream)
        }
    }

    func upstreamDidRead(_ upstream: UpstreamConnection) {}
    func upstreamDidDrain(_ upstream: UpstreamConnection) {}
    func upstreamWanted(_ upstream: UpstreamConnection) {}

    // MARK: - from the leases

    /// `lease` will send its next request here.
    func bind(_ lease: HTTP2UpstreamLease) {
        if !lease.awaitsStream {
            lease.awaitsStream = true
            bound.append(lease)
        }
        if isReady { touch(lease) }
    }

    /// Takes `lease` off ``bound`` (if it is there): its stream opened, or it left.
    private func unbind(_ lease: HTTP2UpstreamLease) {
        guard lease.awaitsStream else { return }
        lease.awaitsStream = false
        // Streams open in the order their leases were bound: the first entry, usually.
        if let index = bound.firstIndex(where: { $0 === lease }) { bound.remove(at: index) }
    }

    /// `lease` wrote, read or widened its window: look at it in this loop iteration's turn.
    func touch(_ lease: HTTP2UpstreamLease) {
        touched.append(lease)
        scheduleTurn()
    }

    /// `lease` is done with `stream` before its response ended (its session closed): the stream
    /// is cancelled. `nothingReceived`: not even a response head came on it — the connection
    /// may be dead, and is probed (``LivenessProbe``).
    func cancel(_ lease: HTTP2UpstreamLease, stream: Int32, code: HTTP2ErrorCode = .cancel, nothingReceived: Bool = false) {
        let open = stream > 0 && streams[stream] === lease
        detach(lease, stream: stream)
        guard open else { return }
        codec.reset(stream: stream, code)
        if nothingReceived && liveness.streamAbandoned(now: Timer.coarseNow()) == .probe { probe() }
    }

    /// Whether the upstream still answers (see ``LivenessProbe``).
    private var liveness = LivenessProbe()
    /// The probe's deadline (made on first use: most connections never give a stream up).
    private var probeTimer: Timer?

    /// Sends the liveness `PING` and runs its deadline, the connect timeout (as for `SETTINGS`).
    private func probe() {
        codec.ping()
        let timer = probeTimer ?? {
            let made = Timer(on: upstreams.loop) {}
            made.action = { [unowned self] in probeDeadlinePassed() }
            probeTimer = made
            return made
        }()
        timer.schedule(after: upstreams.settingsTimeout)
        scheduleTurn()
    }

    /// The probe's deadline: nothing came from the upstream since the probe, and what this side
    /// sends has gone (or the deadline ran twice): the connection is closed (its streams fail,
    /// and those that may be are sent again elsewhere).
    private func probeDeadlinePassed() {
        guard !isClosed else { return }
        let outputWaiting = codec.wantsToSend || socket?.output.isEmpty == false
        switch liveness.deadlinePassed(outputWaiting: outputWaiting) {
        case .alive: break
        case .waitAgain: probeTimer?.schedule(after: upstreams.settingsTimeout)
        case .dead: close(.timeout)
        }
    }

    /// `lease` leaves `stream` (0: it never opened one): what it received and the session did
    /// not take goes back to the connection's window (nghttp2 counts it for the connection
    /// even once the stream is gone), and later frames of the stream are nobody's.
    func detach(_ lease: HTTP2UpstreamLease, stream: Int32) {
        unbind(lease)
        // Its entries in the lists of streams to come back to are dropped when met; the next
        // connection lists it anew, even under the same stream id.
        lease.roomListedFor = 0
        lease.queueListedFor = 0
        // Nothing of it waits in the codec for the lease any more: its write timeout stops.
        lease.countQueued(0)
        if stream > 0 {
            if streams[stream] === lease { streams[stream] = nil }
            codec.consumed(stream: stream, count: lease.takeUnreported())
        }
        scheduleTurn()
    }

    private func scheduleTurn() {
        guard !turnScheduled, !turning, !isClosed else { return }
        turnScheduled = true
        turnTask.schedule()
    }

    // MARK: - the socket

    func connectionDidRead(_ connection: any ByteStream) {
        liveness.heardFromPeer()
        // The leases the frames touch are looked at by the turn this ends with: marked as turning,
        // a touch schedules no turn of its own (one more turn a gRPC call at c=1, which found
        // nothing to do but cost ~1k instructions).
        let outer = turning
        turning = true
        do {
            try HTTP2CodecIO.receive(connection.input, codec: codec, while: { !isClosed }, handle: handle)
        } catch {
            turning = outer
            fail(.socketError(errno: EPROTO))
            return
        }
        turning = outer
        turn()
    }

    func connectionDidDrain(_ connection: any ByteStream) {
        // Room in the socket's output matters only to frames the codec holds back and what waits
        // behind them (as on the app side): most drains follow a turn that sent everything, and
        // a turn for each was two of a unary call's five on a connection that nothing batches.
        guard codec.wantsToSend || !touched.isEmpty || !waitingForRoom.isEmpty || !queuedBodies.isEmpty else { return }
        turn()
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        // With no stream open, the read timeout is the idle timeout.
        close(reason)
    }

    private func handle(_ events: consuming [HTTP2Event]) {
        // Most sends lead to no event: an empty list is not worth the loop's setup.
        if events.isEmpty { return }
        events.withUnsafeMutableBufferPointer { events in
            for index in events.indices {
                switch HTTP2Event.take(events, at: index) {
                case .head(let id, let head):
                    liveness.messageCame()
                    let lease = streams[id]
                    let ended = index + 1 < events.count && events[index + 1].isEnd(of: id) && lease?.bodyBeforeHead != true
                    lease?.receiveHead(head, endStream: ended)
                case .data(let id, let bytes):
                    liveness.messageCame()
                    if streams[id].map({ lease in bytes.withUnsafeBytes { lease.receiveBody($0) } }) != true {
                        codec.consumed(stream: id, count: bytes.count)
                    }
                    codec.recycle(data: bytes)
                case .trailers(let id, let fields):
                    streams[id]?.receiveEnd(trailers: fields)
                case .end(let id):
                    streams[id]?.receiveEnd(trailers: nil)
                case .reset(let id, let code), .closed(let id, let code):
                    // A reset after a complete response (RFC 9113 §8.1: a server that answered
                    // before the whole upload) ends the exchange as a close does.
                    guard let lease = streams[id] else { continue }
                    if lease.responseComplete {
                        lease.streamClosed()
                    } else {
                        lease.streamFailed(code)
                    }
                case .goAway(let last, let code):
                    // Streams above its last one are closed by the codec (REFUSED_STREAM), and
                    // their exchanges retried elsewhere; the rest finish here. A server that
                    // refused streams so (at its requests-per-connection limit, not an idle or
                    // shutdown notice) teaches that limit.
                    goingAway = true
                    if code == .noError, streams.containsKey(where: { $0 > last }) {
                        upstreams.learn(requestLimit: (Int(last) + 1) / 2, key: target.poolKey)
                    }
                case .headTooLarge(let id):
                    codec.reset(stream: id, .protocolError)
                    streams[id]?.streamFailed(.protocolError)
                case .malformed(let id):
                    streams[id]?.streamFailed(.protocolError)
                case .settingsAcknowledged:
                    settingsTimer?.cancel()
                    settingsTimer = nil
                case .settings(let maxConcurrentStreams):
                    peerSettingsCame = true
                    upstreams.learn(streamLimit: maxConcurrentStreams, key: target.poolKey)
                case .provokedReset, .refusedStream, .emptyData, .ping:
                    // A provoked reset closes its stream, and the close fails its exchange; the
                    // rest are a client's concern only where it serves apps.
                    break
                }
            }
        }
        // The list's storage takes the codec's next events.
        codec.recycle(events: events)
    }

    /// A response head a lease's exchange has read: its storage takes a next decoded head.
    func recycle(head: consuming HTTP2Head) {
        codec.recycle(head: head)
    }

    /// Opens the streams of bound leases whose request head is complete, moves request bytes,
    /// delivers response bytes, reopens windows, and writes the codec's frames.
    private func turn() {
        turnScheduled = false
        guard !isClosed, socket != nil else { return }
        let outer = turning
        turning = true
        defer { turning = outer }
        touched.drain(passes: 8, look: service, afterPass: flushCodec)
        flushCodec()
        // Request bodies waiting for room in their stream's send queue go on.
        if !waitingForRoom.isEmpty {
            waitingForRoom.removeAll { entry in
                guard streams[entry.id] === entry.lease, entry.lease.hasRequestBytes else {
                    if entry.lease.roomListedFor == entry.id { entry.lease.roomListedFor = 0 }
                    return true
                }
                guard entry.lease.hasSendRoom(codec) else { return false }
                entry.lease.roomListedFor = 0
                touched.append(entry.lease)
                return true
            }
        }
        if !touched.isEmpty && !turnScheduled {
            // What this turn left (more than its passes, or streams whose room opened) goes on
            // after the loop polls.
            turnScheduled = true
            turnTimer.schedule(after: .zero)
        }
        // What went out of the streams' send queues restarts their write timeouts.
        if !queuedBodies.isEmpty {
            queuedBodies.removeAll { entry in
                if streams[entry.id] === entry.lease, entry.lease.queuedInCodec > 0 {
                    entry.lease.countQueued(codec.bufferedBody(stream: entry.id))
                    if entry.lease.queuedInCodec > 0 { return false }
                }
                if entry.lease.queueListedFor == entry.id { entry.lease.queueListedFor = 0 }
                return true
            }
        }
        if streams.isEmpty && bound.isEmpty
            && (goingAway || upstreams.requestLimit(key: target.poolKey).map { opened >= $0 } == true) {
            // Nothing more will go over it: going away, or at the upstream's request limit.
            close(.endOfStream)
            return
        }
        if !codec.isActive {
            close(.endOfStream)
            return
        }
        socket?.setTimeouts(read: streams.isEmpty && bound.isEmpty ? upstreams.idleTimeout : nil, write: nil)
    }

    private func service(_ lease: HTTP2UpstreamLease) {
        let opened = lease.stream
        guard lease.connection === self else { return }
        do {
            try lease.sendRequest(codec)
        } catch {
            // The session wrote a request HTTP/2 cannot carry (or the codec refused it): a
            // stream it opened is reset, and the exchange fails.
            if lease.stream > 0 { codec.reset(stream: lease.stream, .internalError) }
            lease.streamFailed(.internalError)
            return
        }
        // (What it left in the codec's send queue it counted as it went: ``HTTP2UpstreamLease/sendRequest(_:)``.)
        if opened == 0, lease.stream > 0 {
            unbind(lease)
            streams[lease.stream] = lease
            self.opened += 1
            if lease.stream >= Self.lastStreamID { goingAway = true }
        }
        let id = lease.stream
        if id > 0 {
            // Listed once per stream for what the turn must come back to.
            if lease.roomListedFor != id && lease.hasRequestBytes {
                lease.roomListedFor = id
                waitingForRoom.append((id, lease))
            }
            if lease.queueListedFor != id && lease.queuedInCodec > 0 {
                lease.queueListedFor = id
                queuedBodies.append((id, lease))
            }
        }
        guard lease.connection === self else { return }
        lease.deliver()
        // After the delivery: what the session took in it reopens the windows now.
        let consumed = lease.takeConsumed()
        if consumed > 0, id > 0 { codec.consumed(stream: id, count: consumed) }
    }

    /// Sends the PING answers the codec holds if no frames took them in time.
    private lazy var pingAnswers = PingAnswerClock(loop: upstreams.loop) { [unowned self] in
        codec.releasePingAnswers()
        flushCodec()
    }

    private func flushCodec() {
        guard let socket else { return }
        do {
            handle(try HTTP2CodecIO.send(codec, to: socket, limit: Self.outputLimit))
        } catch {
            fail(.socketError(errno: EPROTO))
            return
        }
        pingAnswers.follow(holding: codec.holdsPingAnswers)
    }

    // MARK: - ends

    private func settingsTimedOut() {
        settingsTimer = nil
        guard !isClosed else { return }
        goingAway = true
        codec.goAway(.settingsTimeout)
        turn()
    }

    /// A protocol error: the codec's GOAWAY goes out, the streams fail.
    private func fail(_ reason: ConnectionEnd) {
        if let socket { _ = try? codec.send { bytes in socket.output.append(bytes) } }
        close(reason)
    }

    /// Closes: every lease bound here hears `reason` (an exchange that sent nothing may be
    /// retried on another connection).
    func close(_ reason: ConnectionEnd) {
        guard !isClosed else { return }
        isClosed = true
        turnTask.cancel()
        turnTimer.cancel()
        pingAnswers.cancel()
        // A lease listed here and never looked at would stay marked: a stream of it that goes on
        // on another connection (a completed one, reused) would not be listed there.
        touched.removeAll()
        settingsTimer?.cancel()
        settingsTimer = nil
        probeTimer?.cancel()
        upstreams.connectionClosed(self)
        dialing?.close()
        dialing = nil
        if let socket {
            if streams.isEmpty { codec.goAway(.noError) }
            _ = try? codec.send { bytes in socket.output.append(bytes) }
            socket.closeAfterFlush(linger: .seconds(1))
        }
        socket = nil
        let open = streams.allValues + bound
        for lease in bound { lease.awaitsStream = false }
        streams.removeAll()
        bound.removeAll()
        for lease in open { lease.connectionEnded(reason) }
    }
}
