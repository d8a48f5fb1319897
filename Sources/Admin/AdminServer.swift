import EventLoop
import Proxy

/// The admin listener, answered by the proxy's own session engine (``LocalServer``): `GET /healthz`, `/readyz`, `/metrics` (Prometheus text 0.0.4) and
/// `/tokens` (token status, never token values); 404 for other paths, 405 for methods other
/// than GET and HEAD.
///
/// Threading: as for ``LocalServer`` — create it on its loop's thread or before that loop
/// runs, close it on that thread. ``AdminProvider`` documents when its closures are called.
/// To run it on a thread of its own, use ``ServerThread``.
public final class AdminServer: LoopServer {
    private let server: LocalServer

    /// Binds `address` on `loop` and starts serving what `provider` supplies.
    public init(address: SocketAddress, loop: EventLoop, provider: AdminProvider,
                limits: LocalServerLimits = LocalServerLimits()) throws(EventLoopError) {
        server = try LocalServer(address: address, on: loop, limits: limits) { request, respond in
            // Completions may arrive on any thread: hop back to the loop before touching the connection.
            let bound = LoopBound(respond, on: loop)
            AdminRoutes.handle(request, provider: provider) { response in
                bound.run { respond in respond(response) }
            }
        }
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var address: SocketAddress { server.address }

    /// Stops listening and closes every connection.
    public func close() { server.close() }
}
