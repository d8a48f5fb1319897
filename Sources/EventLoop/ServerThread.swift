/// Runs one or more ``LoopServer``s (admin, demo issuer and backend) on a loop of their own,
/// on a dedicated thread.
///
/// The servers are created by `make` on the calling thread before the loop thread starts
/// (thread creation orders those writes before the loop's reads); after ``start()`` they are
/// touched only on the loop thread. ``addresses`` and ``stop()`` are safe from the thread that
/// owns this object.
public final class ServerThread: @unchecked Sendable {
    // @unchecked: `servers` is written in init, then read only on the loop thread (in stop's
    // closure); `thread` is used only by the owning thread.
    private let thread: LoopThread
    private let servers: [any LoopServer]
    /// The bound address of each server, in the order `make` returned them.
    public let addresses: [SocketAddress]

    /// The loop the servers run on (for ``EventLoop/execute(_:)``).
    public var loop: EventLoop { thread.loop }

    /// Creates the loop and, through `make`, the servers on it. Nothing runs until ``start()``.
    public init(_ make: (EventLoop) throws -> [any LoopServer]) throws {
        thread = try LoopThread { _ in }
        servers = try make(thread.loop)
        addresses = servers.map(\.address)
    }

    /// Starts the loop thread.
    public func start() throws {
        try thread.start()
    }

    /// Closes the servers on their loop, stops the loop and joins the thread. Call once.
    public func stop() {
        let servers = UncheckedServers(servers)
        thread.loop.execute { for server in servers.list { server.close() } }
        thread.stopAndJoin()
    }
}

/// Carries the loop-confined servers into the closure that closes them on their loop.
private struct UncheckedServers: @unchecked Sendable {
    let list: [any LoopServer]
    init(_ list: [any LoopServer]) { self.list = list }
}
