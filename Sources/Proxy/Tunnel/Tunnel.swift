import EventLoop

/// A client connection that left HTTP: bytes relayed both ways untouched, with the same
/// watermark backpressure as the HTTP relay. Either side closing ends the tunnel after flushing
/// what the other side still has to receive.
///
/// Two kinds: a CONNECT tunnel to an allowed destination (the tunnel connects, then answers
/// `200 Connection Established`; nothing is injected: the proxy cannot see inside TLS), and an
/// upgraded connection (``Upgrade``): after a `101` to a request that asked for it, the client
/// and the upstream connection that carried the request, with an idle timeout and an optional
/// lifetime of its own, counted and logged when it ends.
final class Tunnel: ConnectionDelegate {
    /// What an upgraded connection carries beyond a CONNECT tunnel.
    struct Upgrade {
        /// The route's label (metrics).
        let route: String
        /// No byte either way for this long ends it (`timeouts.upgradedIdle`).
        let idle: Duration
        /// The route's `maxUpgradedLifetime`, if any.
        let lifetime: Duration?
        /// The protocol is WebSocket: a lifetime or a drain ends with a `1001 Going Away` close
        /// frame sent to the client at a frame boundary (other protocols are simply closed).
        let websocket: Bool
        /// Called once when it ends, with the bytes relayed client → upstream and upstream → client.
        let ended: (_ bytesUp: Int, _ bytesDown: Int) -> Void
    }

    private let client: any ByteStream
    private var upstream: (any ByteStream)?
    private let context: WorkerContext
    private var connectTimer: Timer?
    private var established = false
    private var finished = false
    private var clientDone = false
    private var upstreamDone = false
    /// The CONNECT destination (nil for an upgraded connection, whose upstream exists).
    private let destination: (host: String, port: Int)?
    private let upgrade: Upgrade?
    /// Bytes relayed each way (upgraded connections: the access log).
    private var bytesUp = 0
    private var bytesDown = 0
    /// Frame boundaries of what the upstream sends (a WebSocket's), so that it can be ended
    /// between two frames.
    private var frames: WebSocketFrameCursor?
    /// The lifetime is over, or the process drains: at the next frame boundary the client gets
    /// `1001 Going Away`.
    private var expired = false
    /// Runs out the route's `maxUpgradedLifetime` (internal: a test expires it).
    private(set) var lifetimeTimer: Timer?
    /// Ends the tunnel after its idle timeout with no byte in either direction: restarted by
    /// every relay, whichever way (a per-side read timeout would cut a one-way stream, such as a
    /// WebSocket that only pushes). Internal: a test expires it.
    let idleTimer: Timer
    /// The idle timeout (`timeouts.idle` for CONNECT, `upgradedIdle` for an upgrade).
    private var idle: Duration = .zero

    /// A CONNECT tunnel to `host:port`.
    init(client: any ByteStream, host: String, port: Int, context: WorkerContext) {
        self.client = client
        self.context = context
        destination = (host, port)
        upgrade = nil
        idleTimer = Timer(on: context.loop) {}
        idleTimer.action = { [unowned self] in finish() }
    }

    /// An upgraded connection between `client` and `upstream` (both connected; each may hold
    /// bytes already: what followed the request head, and what followed the `101`).
    init(client: any ByteStream, upstream: any ByteStream, context: WorkerContext, upgrade: Upgrade) {
        self.client = client
        self.upstream = upstream
        self.context = context
        destination = nil
        self.upgrade = upgrade
        if upgrade.websocket { frames = WebSocketFrameCursor() }
        idleTimer = Timer(on: context.loop) {}
        idleTimer.action = { [unowned self] in finish() }
    }

    /// Takes over the client connection and connects to the destination (a CONNECT tunnel), or
    /// starts relaying (an upgraded connection).
    func start() {
        client.delegate = self
        if let upgrade, let upstream {
            upstream.delegate = self
            context.metrics.upgradedConnections[upgrade.route, default: 0] += 1
            context.metrics.upgradedOpen[upgrade.route, default: 0] += 1
            if let lifetime = upgrade.lifetime {
                lifetimeTimer = Timer(on: context.loop, after: lifetime) { [unowned self] in goAwaySoon() }
            }
            established(idle: upgrade.idle)
            // The upstream may have closed right after its 101 (the close was read with it, and
            // reported to the pool's connection, not here).
            if !finished && upstream.seenPeerActivity == .closed { connection(upstream, didEnd: .endOfStream) }
            return
        }
        guard let destination else { return }
        upstream = Connection.connect(host: destination.host, port: destination.port, on: context.loop, delegate: self)
        connectTimer = Timer(on: context.loop, after: context.timeouts.connect) { [unowned self] in
            fail(ProxyError(status: 504, type: "connection_timeout", message: "could not connect to the tunnel destination in time"))
        }
        if upstream == nil {
            fail(ProxyError(status: 502, type: "proxy_internal_error", message: "could not create a connection"))
        }
    }

    func connectionDidConnect(_ connection: any ByteStream) {
        guard connection === upstream, !established else { return }
        connectTimer = nil
        client.write(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
        established(idle: context.timeouts.idle)
    }

    /// Both sides are connected: relay what each already holds, then read both.
    private func established(idle: Duration) {
        guard let upstream else { return }
        established = true
        upstream.setReadHighWatermark(WorkerContext.readAhead)
        // A tunnel silent in both directions for `idle` ends (so a half-closed one cannot linger);
        // a side that does not take what is queued for it for bodyIdle ends it too.
        self.idle = idle
        idleTimer.schedule(after: idle)
        for side in [client, upstream] { side.setTimeouts(read: nil, write: context.timeouts.bodyIdle) }
        // Bytes the client sent right after its head (a TLS ClientHello, WebSocket frames) go
        // first; for an upgraded connection, also what the upstream sent right after its 101.
        relay(from: client, to: upstream)
        relay(from: upstream, to: client)
        guard !finished else { return }
        upstream.startReading()
        client.startReading()
    }

    func connectionDidRead(_ connection: any ByteStream) {
        guard established, let upstream else { return }
        if connection === client { relay(from: client, to: upstream) } else { relay(from: upstream, to: client) }
    }

    func connectionDidDrain(_ connection: any ByteStream) {
        guard established, let upstream else { return }
        // The slow side caught up: resume reading the other one.
        if connection === client { upstream.startReading(); relay(from: upstream, to: client) }
        else { client.startReading(); relay(from: client, to: upstream) }
    }

    func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) {
        guard !established else {
            guard reason == .endOfStream, let upstream else {
                finish()
                return
            }
            // Half-close: pass on what this side sent, then end the other side's write direction
            // once it is flushed; bytes keep flowing the other way until that side ends too.
            let other = connection === client ? upstream : client
            relay(from: connection, to: other)
            other.finishWriting()
            if connection === client { clientDone = true } else { upstreamDone = true }
            if clientDone && upstreamDone { finish() }
            return
        }
        if connection === client {
            finish()
        } else {
            fail(.upstreamFailure(reason, connected: false, partial: false))
        }
    }

    private func relay(from source: any ByteStream, to destination: any ByteStream) {
        if !source.input.isEmpty { idleTimer.schedule(after: idle) }
        if source === client {
            bytesUp += source.input.moveAll(to: destination.output)
        } else if frames != nil {
            relayFrames()
        } else {
            bytesDown += source.input.moveAll(to: destination.output)
        }
        if destination.output.count >= WorkerContext.highWatermark { source.stopReading() }
    }

    /// Relays the upstream's bytes frame by frame (their headers read, payloads moved whole), so
    /// that an expired lifetime can put a close frame between two of them.
    private func relayFrames() {
        guard var cursor = frames, let upstream else { return }
        let input = upstream.input
        while !input.isEmpty || (expired && cursor.atBoundary) {
            if cursor.atBoundary {
                if expired {
                    goAway()
                    return
                }
                switch cursor.begin(input.peekBytes(max: WebSocketFrameCursor.maxHeaderLength)) {
                case .needMore:
                    frames = cursor
                    return
                case .malformed:
                    // Not WebSocket as expected: no boundaries to find; relay as it comes.
                    frames = nil
                    bytesDown += input.moveAll(to: client.output)
                    return
                case .frame:
                    break
                }
            }
            let moved = input.move(to: client.output, max: cursor.remaining)
            bytesDown += moved
            cursor.advance(moved)
            if moved == 0 { break }
        }
        frames = cursor
    }

    /// The process drains: an upgraded connection ends as at the end of its lifetime (so its app
    /// reconnects, to another instance); a CONNECT tunnel, whose bytes the proxy cannot read,
    /// runs on until it ends or the drain times out.
    func drain() {
        if upgrade != nil { goAwaySoon() }
    }

    /// The route's `maxUpgradedLifetime` is over, or the process drains: a WebSocket client gets
    /// `1001 Going Away` at the next frame boundary of what the upstream sends; any other
    /// protocol is closed.
    private func goAwaySoon() {
        lifetimeTimer = nil
        guard !finished, !expired else { return }
        expired = true
        guard frames != nil else {
            finish()
            return
        }
        relayFrames()
    }

    /// Sends the client the close frame, closes the upstream, and closes the client once the
    /// frame is flushed (it answers with its own close, which nobody needs to read). After the
    /// upstream's half-close the client's sending side is shut: it just ends.
    private func goAway() {
        guard !finished else { return }
        guard !upstreamDone else {
            finish()
            return
        }
        finished = true
        lifetimeTimer = nil
        idleTimer.suspend()
        client.output.append(WebSocketFrameCursor.closeFrame(code: 1001))
        upstream?.close()
        upstream = nil
        closeClientThenForget()
        ended()
    }

    private func fail(_ error: ProxyError) {
        guard !finished else { return }
        upstream?.close()
        upstream = nil
        client.write(ErrorResponse.bytes(for: error, close: true))
        finished = true
        connectTimer = nil
        idleTimer.suspend()
        closeClientThenForget()
        ended()
    }

    /// Flushes what each side still has to receive, then closes both.
    private func finish() {
        guard !finished else { return }
        finished = true
        connectTimer = nil
        lifetimeTimer = nil
        idleTimer.suspend()
        if let upstream {
            bytesUp += client.input.moveAll(to: upstream.output)
            bytesDown += upstream.input.moveAll(to: client.output)
            upstream.closeAfterFlush()
        }
        upstream = nil
        closeClientThenForget()
        ended()
    }

    /// Closes the client once what is queued for it has left, and only then lets the worker
    /// forget the tunnel: a drain must not end the process under a close frame or the last
    /// bytes of a response still on their way.
    private func closeClientThenForget() {
        client.closeAfterFlush { [self] in context.removeTunnel(self) }
    }

    /// Counts the end of an upgraded connection (once: every path that ends it sets `finished`).
    private func ended() {
        guard let upgrade else { return }
        context.metrics.upgradedOpen[upgrade.route, default: 1] -= 1
        if context.metrics.upgradedOpen[upgrade.route] == 0 { context.metrics.upgradedOpen[upgrade.route] = nil }
        upgrade.ended(bytesUp, bytesDown)
    }

    /// Closes both sides now (loop shutdown).
    func abort() {
        guard !finished else { return }
        finished = true
        connectTimer = nil
        lifetimeTimer = nil
        idleTimer.cancel()
        upstream?.close()
        client.close()
        ended()
    }
}
