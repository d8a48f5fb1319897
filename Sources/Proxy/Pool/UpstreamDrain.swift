import EventLoop
import HTTP1
import HTTPMessage

/// The rest of a response whose client left, read and dropped so that its backend connection
/// goes back to the pool instead of being closed (``Exchange/clientEnded(cleanly:responseLeft:)``
/// decides when: a request sent whole, and either no response head yet or a known length of at
/// most ``Exchange/drainLimit`` bytes still to come).
///
/// A client that leaves in the middle of an exchange is common (a benchmark's end, an app that
/// cancels or times out); closing its backend connection makes the next request pay for a new
/// connection and, over TLS, a handshake on both sides. The drain owns the upstream until the
/// response is complete, then releases it to the pool (which closes it if anything came beyond
/// the response). A stream of an HTTP/2 upstream is not drained but reset. It closes the
/// connection instead when the head, once it comes, announces a body of
/// unknown length or more than the limit, or a close; when the backend closes, errs or sends
/// something malformed; when the head takes longer than ``headWait`` or the body stalls past the
/// connection's read timeout; and when a waiting request needs the connection.
final class UpstreamDrain: UpstreamConnectionOwner {
    /// How long a drain waits for a response head the client left before (a backend still
    /// working on it keeps the connection only that long).
    static let headWait: Duration = .seconds(1)

    private let upstream: UpstreamConnection
    /// The body's relay once its head is known; `nil` while waiting for the head.
    private var relay: BodyRelay?
    /// The request's method (a response to `HEAD` has no body) while waiting for the head.
    private let method: String
    private var headReader = HeadReader(limit: HeadLimits.responseHead)
    private let context: WorkerContext

    private init(upstream: UpstreamConnection, relay: BodyRelay?, method: String, context: WorkerContext) {
        self.upstream = upstream
        self.relay = relay
        self.method = method
        self.context = context
    }

    /// Takes `upstream` over: `relay` is its response body's relay state, or `nil` when no
    /// final head has arrived yet (`method`: the request's). Drops what is already buffered; the
    /// connection owns the drain until the drain releases or closes it.
    static func start(_ upstream: UpstreamConnection, relay: BodyRelay?, method: String, context: WorkerContext) {
        // A connection still being set up has nothing worth waiting for yet. Nor has a stream
        // of an HTTP/2 upstream: cancelling it costs no connection, and tells the upstream at
        // once that nobody waits for the answer (a gRPC server cancels the call).
        guard upstream.isConnected, upstream.http2Stream == nil else {
            upstream.owner = nil
            upstream.close(reset: true)
            return
        }
        let drain = UpstreamDrain(upstream: upstream, relay: relay, method: method, context: context)
        upstream.owner = drain
        if relay == nil {
            let idle = context.timeouts.bodyIdle
            upstream.setTimeouts(read: min(Self.headWait, idle), write: idle)
        }
        upstream.startReading(readAhead: WorkerContext.readAhead)
        drain.pump()
    }

    /// Reads the head if it is still to come, then drops body bytes; releases the connection
    /// once the response is complete.
    private func pump() {
        guard let input = upstream.input else { return finish(pooled: false) }
        if relay == nil {
            do {
                while relay == nil, !input.isEmpty {
                    let method = self.method
                    guard let head = try headReader.read(from: input, prefix: { bytes throws(HTTPParseError) in
                        let view = try ResponseHeadParser.viewPrefix(bytes, requestMethod: method)
                        return ((view.status, view.framing, view.keepAlive), view.bytes.count)
                    }) else { return }
                    headReader.reset()
                    if head.0 < 200 { continue }  // an interim head: the final one follows
                    guard head.2, Self.drainable(head.1) else { return finish(pooled: false) }
                    relay = BodyRelay(framing: head.1, chunkedOutput: false, forwardTrailers: false)
                }
            } catch {
                return finish(pooled: false)
            }
            guard relay != nil else { return }
        }
        // The dropped bytes pass through the worker's scratch buffer, emptied at once.
        let sink = context.scratch.buffer
        var progress: BodyRelay.Progress
        repeat {
            do {
                progress = try relay!.pump(from: input, to: sink, limit: WorkerContext.highWatermark)
            } catch {
                return finish(pooled: false)
            }
            sink.drain(sink.count)
        } while progress == .blocked
        if progress == .complete { finish(pooled: true) }
    }

    /// Whether a body framed so is worth reading to keep the connection: a known length of at
    /// most the limit (a stream, or a body that ends with the connection, is not).
    private static func drainable(_ framing: BodyFraming) -> Bool {
        switch framing {
        case .none: return true
        case .contentLength(let length): return length <= UInt64(Exchange.drainLimit)
        case .chunked, .untilClose: return false
        }
    }

    private func finish(pooled: Bool) {
        guard upstream.owner === self else { return }
        if pooled {
            context.metrics.drainedResponses += 1
            context.pool.release(upstream)
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
