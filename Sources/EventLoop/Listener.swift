import CLibevent
import Glibc

/// A listening TCP socket on one loop (`SO_REUSEPORT`, so every worker loop can own one on the same port).
public final class Listener {
    /// The loop that accepts.
    public let loop: EventLoop
    /// The address actually bound (the real port when 0 was asked for).
    public let address: SocketAddress
    private var listener: OpaquePointer?
    private let onAccept: (Connection) -> Void

    /// Binds and starts accepting; `onAccept` gets each new connection (not yet reading).
    public init(address: SocketAddress, on loop: EventLoop, backlog: Int32 = 1024,
                onAccept: @escaping (Connection) -> Void) throws(EventLoopError) {
        self.loop = loop
        self.onAccept = onAccept
        let flags = UInt32(LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC)
        let created = address.withSockaddr { sa, length in
            evconnlistener_new_bind(loop.base, nil, nil, flags, backlog, sa, length)
        }
        guard let created else {
            throw .address("cannot listen on \(address): errno \(shim_errno())")
        }
        self.listener = created
        self.address = SocketAddress.local(of: evconnlistener_get_fd(created)) ?? address
        evconnlistener_set_cb(created, listenerAcceptTrampoline, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { close() }

    /// Stops accepting and closes the socket.
    public func close() {
        if let listener { evconnlistener_free(listener) }
        listener = nil
    }

    func handleAccept(_ fd: Int32) {
        guard let connection = Connection.accepted(socket: fd, on: loop) else { return }
        onAccept(connection)
    }
}
