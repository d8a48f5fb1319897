import EventLoop
import Glibc
import HTTP1
import HTTP2

/// One HTTP/2 connection to an upstream, shared by the ``HTTP2UpstreamStream``s whose requests
/// it carries: the ``HTTP2Codec`` (client side) over a socket the ``UpstreamPool`` dialled
/// (over TLS, only if the upstream agreed to `h2` in ALPN).
///
/// Response frames go to their stream's pipe as HTTP/1.1; a stream's receive window opens only
/// as its session takes the bytes, so a slow app slows only its own stream. A `GOAWAY` stops new
/// streams here (the streams it did not process are refused, and their exchanges retried on
/// another connection); a socket that ends fails the streams still open.
///
/// Confined to its worker's loop; kept by ``HTTP2Upstreams`` (and by the pipes bound to it)
/// until it closes.
final class HTTP2UpstreamConnection: UpstreamConnectionOwner, ConnectionDelegate {
    let target: UpstreamTarget
    private unowned let upstreams: HTTP2Upstreams
    private let codec = HTTP2Codec(role: .client)
    /// The socket once dialled and handed over.
    private var socket: (any ByteStream)?
    /// The pool's connection while it dials.
    private var dialing: UpstreamConnection?
    /// Pipes whose request is on a stream here, by stream id.
    private var streams: [Int32: HTTP2UpstreamStream] = [:]
    /// Pipes bound here whose request has not opened its stream yet (the connection is still
    /// being dialled, or their head is not complete).
    private var bound: [HTTP2UpstreamStream] = []
    /// Pipes to look at in the next turn.
    private let touched = TouchedPipes<HTTP2UpstreamStream>()
    private let turnTimer: Timer
    private var turnScheduled = false
    /// The peer sent `GOAWAY`: no new stream starts here.
    private(set) var goingAway = false
    private(set) var isClosed = false

    /// Most streams opened at once on one connection, whatever the peer allows.
    static let maxStreams = 256
    /// What may wait in the socket's output: frames beyond it stay in the codec.
    static let outputLimit = 256 * 1024

    init(target: UpstreamTarget, upstreams: HTTP2Upstreams) {
        self.target = target
        self.upstreams = upstreams
        turnTimer = Timer(on: upstreams.loop) {}
        turnTimer.action = { [unowned self] in turn() }
    }

    /// Whether it is ready for streams (dialled, not going away).
    var isReady: Bool { socket != nil && !goingAway && !isClosed }

    /// Whether one more exchange may be bound here.
    var hasRoom: Bool {
        guard !goingAway, !isClosed, streams.count + bound.count < min(codec.peerMaxConcurrentStreams, Self.maxStreams) else {
            return false
        }
        guard let limit = upstreams.requestLimit(key: target.poolKey) else { return true }
        return opened + bound.count < limit
    }

    /// Streams opened here so far.
    private var opened = 0

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
        stream.delegate = self
        stream.setTimeouts(read: nil, write: nil)
        stream.startReading()
        let waiting = bound
        for pipe in waiting { pipe.connectionReady() }
        for pipe in waiting { touched.append(pipe) }
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

    // MARK: - from the pipes

    /// `pipe` will send its next request here.
    func bind(_ pipe: HTTP2UpstreamStream) {
        bound.append(pipe)
        if isReady { touch(pipe) }
    }

    /// `pipe` wrote, read or widened its window: look at it in this loop iteration's turn.
    func touch(_ pipe: HTTP2UpstreamStream) {
        touched.append(pipe)
        guard !turnScheduled, !isClosed else { return }
        turnScheduled = true
        turnTimer.schedule(after: .zero)
    }

    /// `pipe` is done with `stream` before its response ended (its session closed): the stream
    /// is cancelled.
    func cancel(_ pipe: HTTP2UpstreamStream, stream: Int32) {
        bound.removeAll { $0 === pipe }
        guard stream > 0, streams[stream] === pipe else { return }
        streams[stream] = nil
        codec.reset(stream: stream, .cancel)
        scheduleTurn()
    }

    /// `pipe`'s exchange ended cleanly on `stream` (or never opened one): it leaves.
    func release(_ pipe: HTTP2UpstreamStream, stream: Int32) {
        bound.removeAll { $0 === pipe }
        if stream > 0, streams[stream] === pipe { streams[stream] = nil }
        scheduleTurn()
    }

    private func scheduleTurn() {
        guard !turnScheduled, !isClosed else { return }
        turnScheduled = true
        turnTimer.schedule(after: .zero)
    }

    // MARK: - the socket

    func connectionDidRead(_ connection: any ByteStream) {
        do {
            try HTTP2CodecIO.receive(connection.input, codec: codec, while: { !isClosed }, handle: handle)
        } catch {
            fail(.socketError(errno: EPROTO))
            return
        }
        turn()
    }

    func connectionDidDrain(_ connection: any ByteStream) { turn() }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        // With no stream open, the read timeout is the idle timeout.
        close(reason)
    }

    private func handle(_ events: [HTTP2Event]) {
        for (index, event) in events.enumerated() {
            switch event {
            case .head(let id, let head):
                let ended = index + 1 < events.count && events[index + 1] == .end(stream: id)
                streams[id]?.receiveHead(head, endStream: ended)
            case .data(let id, let bytes):
                if let pipe = streams[id] {
                    pipe.receiveBody(bytes)
                } else {
                    codec.consumed(stream: id, count: bytes.count)
                }
            case .trailers(let id, let fields):
                streams[id]?.receiveEnd(trailers: fields)
            case .end(let id):
                streams[id]?.receiveEnd(trailers: nil)
            case .reset(let id, let code):
                streams.removeValue(forKey: id)?.streamFailed(code)
            case .closed(let id, let code):
                if let pipe = streams.removeValue(forKey: id) {
                    if pipe.responseComplete {
                        pipe.streamClosed()
                    } else {
                        pipe.streamFailed(code)
                    }
                }
            case .goAway(let last, let code):
                // Streams above its last one are closed by the codec (REFUSED_STREAM), and
                // their exchanges retried elsewhere; the rest finish here.
                goingAway = true
                if code == .noError { upstreams.learn(requestLimit: (Int(last) + 1) / 2, key: target.poolKey) }
            case .headTooLarge(let id):
                codec.reset(stream: id, .protocolError)
                streams.removeValue(forKey: id)?.streamFailed(.protocolError)
            case .malformed(let id):
                streams.removeValue(forKey: id)?.streamFailed(.protocolError)
            case .settings:
                break
            }
        }
    }

    /// Opens the streams of bound pipes whose request head is complete, moves request bytes,
    /// delivers response bytes, reopens windows, and writes the codec's frames.
    private func turn() {
        turnScheduled = false
        guard !isClosed, socket != nil else { return }
        touched.drain(passes: 8, look: service, afterPass: flushCodec)
        flushCodec()
        // Request bodies waiting for room in their stream's send queue go on.
        for (_, pipe) in streams where pipe.hasRequestBytes && pipe.hasSendRoom(codec) {
            touched.append(pipe)
        }
        if !touched.isEmpty { scheduleTurn() }
        if goingAway && streams.isEmpty && bound.isEmpty {
            close(.endOfStream)
            return
        }
        if !codec.isActive {
            close(.endOfStream)
            return
        }
        socket?.setTimeouts(read: streams.isEmpty && bound.isEmpty ? upstreams.idleTimeout : nil, write: nil)
    }

    private func service(_ pipe: HTTP2UpstreamStream) {
        let opened = pipe.stream
        guard pipe.connection === self else { return }
        do {
            try pipe.sendRequest(codec)
        } catch {
            // The session wrote a request HTTP/2 cannot carry (or the codec refused it).
            bound.removeAll { $0 === pipe }
            pipe.streamFailed(.internalError)
            return
        }
        if opened == 0, pipe.stream > 0 {
            bound.removeAll { $0 === pipe }
            streams[pipe.stream] = pipe
            self.opened += 1
        }
        let consumed = pipe.takeConsumed()
        if consumed > 0, pipe.stream > 0 { codec.consumed(stream: pipe.stream, count: consumed) }
        pipe.deliver()
    }

    private func flushCodec() {
        guard let socket else { return }
        do {
            handle(try HTTP2CodecIO.send(codec, into: socket.output, limit: Self.outputLimit))
        } catch {
            fail(.socketError(errno: EPROTO))
        }
    }

    // MARK: - ends

    /// A protocol error: the codec's GOAWAY goes out, the streams fail.
    private func fail(_ reason: ConnectionEnd) {
        if let socket { _ = try? codec.send { bytes in socket.output.append(bytes) } }
        close(reason)
    }

    /// Closes: every pipe bound here hears `reason` (an exchange that sent nothing may be
    /// retried on another connection).
    func close(_ reason: ConnectionEnd) {
        guard !isClosed else { return }
        isClosed = true
        turnTimer.cancel()
        upstreams.connectionClosed(self)
        dialing?.close()
        dialing = nil
        if let socket {
            if streams.isEmpty { codec.goAway(.noError) }
            _ = try? codec.send { bytes in socket.output.append(bytes) }
            socket.closeAfterFlush(linger: .seconds(1))
        }
        socket = nil
        let open = Array(streams.values) + bound
        streams.removeAll()
        bound.removeAll()
        for pipe in open { pipe.connectionEnded(reason) }
    }
}
