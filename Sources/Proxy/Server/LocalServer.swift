import Config
import EventLoop
import HTTPMessage
import Logging
import TokenManager

/// A listener whose requests the sidecar answers itself — the admin endpoints, the demo issuer
/// and backend — through the proxy's own ``ClientSession`` and ``Exchange``, with a local
/// responder in place of an upstream: the same head reading, body framing, 100-continue,
/// keep-alive, pipelining and error responses as proxied requests.
///
/// Reads one request at a time per connection (pipelined requests wait in the input buffer),
/// bodies with Content-Length or chunked up to ``LocalServerLimits/maxBodyBytes``, keep-alive,
/// idle timeout. Malformed requests get 400 (431 for oversized heads, 413 for oversized bodies)
/// and the connection is closed. Copies bodies into arrays: not for the proxy's hot path.
///
/// Threading: create the server on its loop's thread, or before that loop starts running, and
/// use it only on that thread afterwards. The responder is called on the loop thread and must
/// call its `respond` closure exactly once, also on the loop thread — immediately or later
/// (hop back with ``EventLoop/execute(_:)`` or ``LoopBound``). Calls after the client has gone,
/// or second calls, are ignored.
public final class LocalServer: LoopServer {
    /// Answers one request; `respond` sends the answer (exactly once, on the loop thread).
    public typealias Responder = (LocalRequest, @escaping (LocalResponse) -> Void) -> Void

    /// The loop the server runs on.
    public let loop: EventLoop
    /// The address actually bound (the real port when 0 was asked for).
    public let address: SocketAddress
    /// The bounds applied to every connection.
    public let limits: LocalServerLimits
    private let context: WorkerContext
    private var listener: Listener?

    /// Binds `address` on `loop` and starts accepting.
    public init(address: SocketAddress, on loop: EventLoop, limits: LocalServerLimits = LocalServerLimits(),
                responder: @escaping Responder) throws(EventLoopError) {
        self.loop = loop
        self.limits = limits
        let context = WorkerContext(loop: loop, local: LocalService(responder: responder, limits: limits))
        self.context = context
        let maxConnections = limits.maxConnections
        // Over the limit a connection is closed at once (an admin endpoint answers a few
        // probes; it should not hold a backlog of them).
        let listener = try Listener(address: address, on: loop) { connection in
            guard context.clientConnections < maxConnections else {
                connection.close()
                return
            }
            context.adopt(connection)
        }
        self.listener = listener
        self.address = listener.address
    }

    deinit {
        listener?.close()
        context.closeAll()
    }

    /// Open connections (for tests and diagnostics).
    public var connectionCount: Int { context.clientConnections }

    /// Stops listening and closes every connection at once (responses not yet written are lost).
    public func close() {
        listener?.close()
        listener = nil
        context.closeAll()
    }
}

/// What a ``WorkerContext`` of a ``LocalServer`` answers with: every request goes to `responder`.
struct LocalService {
    let responder: LocalServer.Responder
    let limits: LocalServerLimits
}
