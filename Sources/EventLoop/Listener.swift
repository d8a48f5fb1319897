import CLibevent
import Glibc

/// A listening TCP socket on one loop (`SO_REUSEPORT`, so every worker loop can own one on the same port).
///
/// Accepting stops in two independent cases and resumes when neither holds: the owner asked
/// (``pauseAccepting()``, e.g. it holds as many connections as it may), or an `accept` failed
/// (descriptor or memory exhaustion), which pauses for an ``AcceptBackoff`` delay instead of
/// retrying in a busy loop. Connections already accepted are not affected either way.
public final class Listener {
    /// The loop that accepts.
    public let loop: EventLoop
    /// The address actually bound (the real port when 0 was asked for).
    public let address: SocketAddress
    private var listener: OpaquePointer?
    private let onAccept: (any ByteStream) -> Void
    private let onAcceptError: ((AcceptFailure) -> Void)?
    /// When set, accepted connections are the server side of TLS with this context.
    private let tls: TLSServerContext?
    private var backoff = AcceptBackoff()
    private var retryTimer: Timer?
    private var heldByOwner = false
    private var backingOff = false
    private var enabled = true

    /// Binds and starts accepting; `onAccept` gets each new connection (not yet reading; with
    /// `tls`, its handshake starts with the loop and completes before it reports a connect);
    /// `onAcceptError` hears each failed `accept` (the listener has already paused).
    public init(address: SocketAddress, on loop: EventLoop, backlog: Int32 = 1024, tls: TLSServerContext? = nil,
                onAcceptError: ((AcceptFailure) -> Void)? = nil,
                onAccept: @escaping (any ByteStream) -> Void) throws(EventLoopError) {
        self.tls = tls
        self.loop = loop
        self.onAccept = onAccept
        self.onAcceptError = onAcceptError
        let flags = UInt32(LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC)
        let created = address.withSockaddr { sa, length in
            evconnlistener_new_bind(loop.base, nil, nil, flags, backlog, sa, length)
        }
        guard let created else {
            throw .address("cannot listen on \(address): errno \(shim_errno())")
        }
        self.listener = created
        self.address = SocketAddress.local(of: evconnlistener_get_fd(created)) ?? address
        let context = Unmanaged.passUnretained(self).toOpaque()
        evconnlistener_set_cb(created, listenerAcceptTrampoline, context)
        // Without an error callback libevent logs every failed accept and retries at once: with
        // no descriptors left that is a busy loop writing a line per attempt.
        evconnlistener_set_error_cb(created, listenerErrorTrampoline)
    }

    deinit { close() }

    /// Stops accepting until ``resumeAccepting()``; pending connections wait in the kernel's backlog.
    public func pauseAccepting() {
        heldByOwner = true
        applyState()
    }

    /// Accepts again (once any accept-error pause has also ended).
    public func resumeAccepting() {
        heldByOwner = false
        applyState()
    }

    /// Stops accepting and closes the socket.
    public func close() {
        retryTimer = nil
        if let listener { evconnlistener_free(listener) }
        listener = nil
    }

    private func applyState() {
        guard let listener else { return }
        let wanted = !heldByOwner && !backingOff
        guard wanted != enabled else { return }
        enabled = wanted
        if wanted {
            evconnlistener_enable(listener)
        } else {
            evconnlistener_disable(listener)
        }
    }

    // MARK: - callbacks (from Trampolines.swift)

    func handleAccept(_ fd: Int32) {
        backoff.succeeded()
        let accepted = tls.map { Connection.acceptTLS(socket: fd, context: $0, on: loop) } ?? Connection.accepted(socket: fd, on: loop)
        guard let connection = accepted else { return }
        onAccept(connection)
    }

    func handleAcceptError(_ code: Int32) {
        guard listener != nil else { return }
        // libevent reports only errors that retrying at once would not fix (it retries EINTR,
        // EAGAIN and ECONNABORTED itself), so every report pauses.
        let pause = backoff.failed()
        backingOff = true
        applyState()
        if retryTimer == nil {
            retryTimer = Timer(on: loop) { [unowned self] in
                backingOff = false
                applyState()
            }
        }
        retryTimer?.schedule(after: pause)
        onAcceptError?(AcceptFailure(code: code, pause: pause))
    }
}
