import EventLoop
import HTTP1

/// A small HTTP/1.1 server for the admin endpoints and the demo issuer/backend — not for the
/// proxy's hot path (it copies bodies into arrays).
///
/// Reads one request at a time per connection (pipelined requests wait in the input buffer),
/// bodies with Content-Length or chunked up to ``SimpleHTTPServerLimits/maxBodyBytes``,
/// keep-alive, idle timeout. Malformed requests get 400 (431 for oversized heads, 413 for
/// oversized bodies) and the connection is closed.
///
/// Threading: create the server on its loop's thread, or before that loop starts running, and
/// use it only on that thread afterwards. The handler is called on the loop thread and must
/// call its `respond` closure exactly once, also on the loop thread — immediately or later
/// (hop back with ``EventLoop/execute(_:)`` or ``LoopBound``). Calls after the client has gone,
/// or second calls, are ignored.
public final class SimpleHTTPServer: LoopServer {
    /// Handles one request; `respond` sends the answer (exactly once, on the loop thread).
    public typealias Handler = (SimpleRequest, @escaping (SimpleResponse) -> Void) -> Void

    /// The loop the server runs on.
    public let loop: EventLoop
    /// The address actually bound (the real port when 0 was asked for).
    public let address: SocketAddress
    /// The bounds applied to every connection.
    public let limits: SimpleHTTPServerLimits
    let handler: Handler
    private var listener: Listener?
    private var sessions: [ObjectIdentifier: SimpleHTTPSession] = [:]

    /// Binds `address` on `loop` and starts accepting.
    public init(address: SocketAddress, on loop: EventLoop, limits: SimpleHTTPServerLimits = SimpleHTTPServerLimits(),
                handler: @escaping Handler) throws(EventLoopError) {
        self.loop = loop
        self.limits = limits
        self.handler = handler
        // The listener's closure must not retain the server (the server owns the listener).
        let acceptor = WeakServer()
        let listener = try Listener(address: address, on: loop) { connection in
            guard let server = acceptor.server else { connection.close(); return }
            server.adopt(connection)
        }
        self.listener = listener
        self.address = listener.address
        acceptor.server = self
    }

    deinit {
        listener?.close()
        for session in sessions.values { session.connection.close() }
    }

    /// Open connections (for tests and diagnostics).
    public var connectionCount: Int { sessions.count }

    /// Stops listening and closes every connection at once (responses not yet written are lost).
    public func close() {
        listener?.close()
        listener = nil
        let open = sessions.values
        sessions.removeAll()
        for session in open { session.connection.close() }
    }

    private func adopt(_ connection: any ByteStream) {
        guard sessions.count < limits.maxConnections else {
            connection.close()
            return
        }
        let session = SimpleHTTPSession(connection: connection, server: self)
        sessions[ObjectIdentifier(session)] = session
        session.start()
    }

    /// Called by a session once it has closed (or handed its connection to a lingering close).
    func sessionDidEnd(_ session: SimpleHTTPSession) {
        sessions[ObjectIdentifier(session)] = nil
    }
}

/// Breaks the server → listener → closure → server cycle.
private final class WeakServer {
    weak var server: SimpleHTTPServer?
}
