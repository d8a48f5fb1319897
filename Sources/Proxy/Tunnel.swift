import EventLoop

/// A CONNECT tunnel to an allowed destination: after `200 Connection Established`, bytes are
/// relayed both ways untouched (nothing is injected: the proxy cannot see inside TLS), with the
/// same watermark backpressure as the HTTP relay. Either side closing ends the tunnel after
/// flushing what the other side still has to receive.
final class Tunnel: ConnectionDelegate {
    private let client: any ByteStream
    private var upstream: (any ByteStream)?
    private let context: WorkerContext
    private var connectTimer: Timer?
    private var established = false
    private var finished = false
    private var clientDone = false
    private var upstreamDone = false

    private let host: String
    private let port: Int

    init(client: any ByteStream, host: String, port: Int, context: WorkerContext) {
        self.client = client
        self.context = context
        self.host = host
        self.port = port
    }

    /// Takes over the client connection and connects to the destination.
    func start() {
        client.delegate = self
        upstream = Connection.connect(host: host, port: port, on: context.loop, delegate: self)
        connectTimer = Timer(on: context.loop, after: context.timeouts.connect) { [unowned self] in
            fail(ProxyError(status: 504, type: "connection_timeout", message: "could not connect to the tunnel destination in time"))
        }
        if upstream == nil {
            fail(ProxyError(status: 502, type: "proxy_internal_error", message: "could not create a connection"))
        }
    }

    func connectionDidConnect(_ connection: any ByteStream) {
        guard connection === upstream, let upstream else { return }
        connectTimer = nil
        established = true
        upstream.setReadHighWatermark(WorkerContext.readAhead)
        // A tunnel silent in both directions for `idle` ends (so a half-closed one cannot linger).
        for side in [client, upstream] { side.setTimeouts(read: context.timeouts.idle, write: context.timeouts.bodyIdle) }
        client.write(Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8))
        // Bytes the client sent right after its CONNECT head (a TLS ClientHello) go first.
        relay(from: client, to: upstream)
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
            connection.input.moveAll(to: other.output)
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
        source.input.moveAll(to: destination.output)
        if destination.output.count >= WorkerContext.highWatermark { source.stopReading() }
    }

    private func fail(_ error: ProxyError) {
        guard !finished else { return }
        upstream?.close()
        upstream = nil
        client.write(ErrorResponse.bytes(for: error, close: true))
        finished = true
        connectTimer = nil
        client.closeAfterFlush()
        context.removeTunnel(self)
    }

    /// Flushes what each side still has to receive, then closes both.
    private func finish() {
        guard !finished else { return }
        finished = true
        connectTimer = nil
        if let upstream {
            client.input.moveAll(to: upstream.output)
            upstream.input.moveAll(to: client.output)
            upstream.closeAfterFlush()
        }
        upstream = nil
        client.closeAfterFlush()
        context.removeTunnel(self)
    }

    /// Closes both sides now (loop shutdown).
    func abort() {
        finished = true
        connectTimer = nil
        upstream?.close()
        client.close()
    }
}
