import EventLoop
import HTTPMessage

/// The rest of a response whose client left, read and dropped so that its backend connection
/// goes back to the pool instead of being closed (``Exchange/clientEnded(cleanly:responseLeft:)``
/// decides when: a known length of at most ``Exchange/drainLimit`` bytes still to come).
///
/// A client that leaves in the middle of a download is common (a benchmark's end, an app that
/// cancels); closing its backend connection makes the next request pay for a new connection
/// and, over TLS, a handshake on both sides. The drain owns the upstream until the response is
/// complete, then releases it to the pool (which closes it if anything came beyond the
/// response); a backend that stalls is ended by the connection's read timeout, one that closes
/// or errs is closed, and a waiting request that needs the connection takes precedence.
final class UpstreamDrain: UpstreamConnectionOwner {
    private let upstream: UpstreamConnection
    private var relay: BodyRelay
    private let pool: UpstreamPool
    /// Where the dropped bytes pass (emptied at once; the worker's scratch buffer).
    private let sink: EventBuffer

    private init(upstream: UpstreamConnection, relay: BodyRelay, pool: UpstreamPool, sink: EventBuffer) {
        self.upstream = upstream
        self.relay = relay
        self.pool = pool
        self.sink = sink
    }

    /// Takes `upstream` over with the relay state of its response (`relay`) and drops what is
    /// already buffered; the connection owns the drain until the drain releases or closes it.
    static func start(_ upstream: UpstreamConnection, relay: BodyRelay, context: WorkerContext) {
        let drain = UpstreamDrain(upstream: upstream, relay: relay, pool: context.pool, sink: context.scratch.buffer)
        upstream.owner = drain
        upstream.startReading(readAhead: WorkerContext.readAhead)
        drain.pump()
    }

    /// Drops what the backend sent; releases the connection once the response is complete.
    private func pump() {
        guard let input = upstream.input else { return finish(pooled: false) }
        var progress: BodyRelay.Progress
        repeat {
            do {
                progress = try relay.pump(from: input, to: sink, limit: WorkerContext.highWatermark)
            } catch {
                return finish(pooled: false)
            }
            sink.drain(sink.count)
        } while progress == .blocked
        if progress == .complete { finish(pooled: true) }
    }

    private func finish(pooled: Bool) {
        guard upstream.owner === self else { return }
        if pooled {
            pool.release(upstream)
        } else {
            upstream.owner = nil
            upstream.close()
        }
    }

    func upstreamDidConnect(_ upstream: UpstreamConnection) {}

    func upstreamDidRead(_ upstream: UpstreamConnection) { pump() }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {}

    func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) { finish(pooled: false) }

    func upstreamWanted(_ upstream: UpstreamConnection) { finish(pooled: false) }
}
