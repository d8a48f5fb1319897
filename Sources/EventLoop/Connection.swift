import CLibevent
import Glibc

/// A TCP connection confined to one ``EventLoop``, carried by one of two channels:
///
/// - **plain sockets** (accepted connections and connects to a resolved address without TLS —
///   the whole proxy data path) are driven here directly (`Connection+Socket.swift`): reads of up
///   to 256 KiB straight into reserved ``input`` space with no `FIONREAD`, writes attempted once per
///   loop iteration as soon as bytes are queued (write interest is asked for only when the kernel
///   would block), and read interest that stays registered across requests (a pause takes effect
///   lazily, only if the peer sends while paused). A keep-alive request costs two reads, two
///   writes and two `epoll_wait`s, and no `epoll_ctl`.
/// - **libevent bufferevents** for TLS (OpenSSL stays behind `bufferevent_openssl`) and for connects
///   by host name (libevent's resolver).
///
/// The connection keeps itself alive (an `Unmanaged` retain) while its socket is open, and holds
/// its delegate strongly; ``close()`` releases the C side first — which clears the C callbacks —
/// and only then drops both references.
public final class Connection: ByteStream {
    /// The loop this connection belongs to; use it only from that loop's thread.
    public let loop: EventLoop
    /// Receives events; cleared by ``close()``.
    public var delegate: (any ConnectionDelegate)?
    /// The bufferevent channel (TLS, connects by name); `nil` for plain sockets and once closed.
    private var bev: OpaquePointer?
    /// The plain-socket channel; `nil` for bufferevents and once closed.
    var socket: SocketChannel?
    private var selfRetain: Unmanaged<Connection>?
    var lingering = false
    private var onFlushed: (() -> Void)?
    private var lingerDuration: Duration = .seconds(2)
    private var lingerCap: Timer?
    var halfClosing = false
    private var appliedTimeouts: (read: Duration?, write: Duration?)?
    private var shutDownWrite = false
    /// Plain sockets own their evbuffers; a bufferevent frees its own.
    private let ownsBuffers: Bool
    /// Whether an outgoing connection has completed its connect — and, for TLS, its handshake
    /// (always true for accepted ones).
    public internal(set) var isConnected: Bool
    /// Whether this is a TLS connection.
    public private(set) var isTLS = false
    /// The TLS context the connection was made with, kept alive as long as the connection: its
    /// session slots are reached from OpenSSL's new-session callback through the `SSL`, and a
    /// context may be replaced (a rotated client certificate, a reloaded config) mid-connection.
    private var tlsContext: TLSClientContext?
    /// Whether the TLS handshake resumed an earlier session (no certificate exchange).
    public private(set) var tlsSessionResumed = false
    /// A TLS error ended the connection (its session must not be resumed).
    private var tlsFailed = false
    /// Whether a peer that closes (FIN or reset) while reading is paused is reported within
    /// ``pausedCloseCheck`` (as ``ConnectionEnd/endOfStream``) instead of when reading resumes. For client connections:
    /// a paused upload must not keep its backend request alive after the client left. Off for
    /// backends, whose unread bytes still count after they close.
    public var reportsCloseWhilePaused = false
    /// Polls for the peer's close while reading is paused. (libevent's `EV_CLOSED` cannot do
    /// it: epoll reports a reset as EPOLLHUP|EPOLLERR, which libevent turns into read/write
    /// readiness, never into `EV_CLOSED`; and a read watch would fire for the pending data.)
    private var closeWatch: Timer?
    /// Linux's POLLRDHUP (the peer shut down its sending side), which Glibc only exports to C
    /// with _GNU_SOURCE.
    private static let pollRDHUP: Int16 = 0x2000
    /// How often a paused connection checks whether its peer is gone.
    static let pausedCloseCheck: Duration = .milliseconds(50)
    /// The end of the connection (peer close, error, timeout) was reported to the delegate.
    var peerEnded = false
    /// The peer closed its sending side (end of stream was read): a lingering close has
    /// nothing left to drain, so it closes as soon as the output is flushed.
    private var peerClosedInput = false
    /// The socket failed (a reset, most often): nothing can be drained or delivered any more.
    private var socketFailed = false

    /// Bytes received and not yet consumed.
    public let input: EventBuffer
    /// Bytes queued for sending.
    public let output: EventBuffer

    private init(loop: EventLoop, bev: OpaquePointer, connected: Bool) {
        self.loop = loop
        self.bev = bev
        self.isConnected = connected
        self.ownsBuffers = false
        self.input = EventBuffer(bufferevent_get_input(bev))
        self.output = EventBuffer(bufferevent_get_output(bev))
        let retained = Unmanaged.passRetained(self)
        selfRetain = retained
        bufferevent_setcb(bev, connectionReadTrampoline, connectionWriteTrampoline, connectionEventTrampoline,
                          retained.toOpaque())
        // Larger single reads/writes than libevent's 16 KiB default: fewer callbacks per body byte.
        bufferevent_set_max_single_read(bev, Connection.maxSingleIO)
        bufferevent_set_max_single_write(bev, Connection.maxSingleIO)
    }

    /// A plain-socket connection over `fd` (connected, or with a connect in progress).
    private init?(loop: EventLoop, socket fd: Int32, connected: Bool) {
        guard let inputBuffer = evbuffer_new() else { return nil }
        guard let outputBuffer = evbuffer_new() else {
            evbuffer_free(inputBuffer)
            return nil
        }
        self.loop = loop
        self.isConnected = connected
        self.ownsBuffers = true
        self.input = EventBuffer(inputBuffer)
        self.output = EventBuffer(outputBuffer)
        let retained = Unmanaged.passRetained(self)
        guard let channel = SocketChannel(fd: fd, loop: loop, context: retained.toOpaque(),
                                          input: inputBuffer, output: outputBuffer) else {
            retained.release()
            return nil
        }
        selfRetain = retained
        socket = channel
    }

    deinit {
        if ownsBuffers {
            evbuffer_free(input.raw)
            evbuffer_free(output.raw)
        }
    }


    static let maxSingleIO = 128 * 1024
    /// Most not-yet-sent bytes the kernel queues on a client socket (`TCP_NOTSENT_LOWAT`).
    static let notSentLowWatermark = 256 * 1024

    // Deferred callbacks: libevent may report a failed connect (or a numeric-host resolution)
    // synchronously inside the call that started it; deferring keeps every delegate call on a
    // clean stack, never re-entering the caller.
    private static let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)

    /// Wraps an accepted socket. Reading starts when ``startReading()`` is called.
    public static func accepted(socket fd: Int32, on loop: EventLoop) -> Connection? {
        _ = shim_set_nodelay(fd)
        // A client that reads slowly would otherwise have up to 4 MiB (tcp_wmem's maximum)
        // queued in the kernel per connection, beyond every limit of the proxy: the response
        // waits in the proxy's own buffers (and spool) instead, where it is counted.
        _ = shim_set_notsent_lowat(fd, Int32(notSentLowWatermark))
        guard let connection = Connection(loop: loop, socket: fd, connected: true) else {
            CLibevent.close(fd)
            return nil
        }
        return connection
    }

    /// Starts connecting to `host:port` (a name is resolved asynchronously, A and AAAA).
    /// The delegate hears ``ConnectionDelegate/connectionDidConnect(_:)`` or
    /// ``ConnectionDelegate/connection(_:didEnd:)``. Bytes written before the connect completes are
    /// sent once it does.
    public static func connect(host: String, port: Int, on loop: EventLoop, delegate: any ConnectionDelegate) -> Connection? {
        guard let bev = bufferevent_socket_new(loop.base, -1, options) else { return nil }
        let connection = Connection(loop: loop, bev: bev, connected: false)
        connection.delegate = delegate
        if bufferevent_socket_connect_hostname(bev, loop.resolver, AF_UNSPEC, host, Int32(port)) != 0 {
            // Failure is also reported through the (deferred) event callback; nothing else to do.
        }
        return connection
    }

    /// Starts a TLS connection to `host:port`: resolves, connects, handshakes and verifies the
    /// peer per `context` before ``ConnectionDelegate/connectionDidConnect(_:)``. Nothing written
    /// before that is sent unless the handshake and verification succeed.
    public static func connectTLS(host: String, port: Int, context: TLSClientContext, on loop: EventLoop,
                                  delegate: any ConnectionDelegate) -> Connection? {
        guard let connection = unconnectedTLS(context: context, serverName: host, port: port, on: loop,
                                              delegate: delegate), let bev = connection.bev else { return nil }
        _ = bufferevent_socket_connect_hostname(bev, loop.resolver, AF_UNSPEC, host, Int32(port))
        return connection
    }

    /// A TLS connection that has not started connecting: an `SSL` for `serverName` (SNI,
    /// verification, session resumption) inside a new bufferevent on `loop`.
    private static func unconnectedTLS(context: TLSClientContext, serverName: String, port: Int, on loop: EventLoop,
                                       delegate: any ConnectionDelegate) -> Connection? {
        guard let ssl = context.makeSSL(host: serverName, port: port) else { return nil }
        guard let bev = bufferevent_openssl_socket_new(loop.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options) else {
            SSL_free(ssl)
            return nil
        }
        // Servers often close without close_notify; treat that as end of stream, not an error
        // (close-delimited bodies end exactly that way).
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1)
        let connection = Connection(loop: loop, bev: bev, connected: false)
        connection.isTLS = true
        connection.tlsContext = context
        connection.delegate = delegate
        return connection
    }

    /// Starts connecting to an already-resolved address, with TLS when `tls` is given (the
    /// name is what the certificate must match and what SNI carries). The delegate hears the
    /// outcome from the loop, never from inside this call.
    public static func connect(to address: SocketAddress, tls: (context: TLSClientContext, serverName: String)?,
                               on loop: EventLoop, delegate: any ConnectionDelegate) -> Connection? {
        guard let tls else {
            let fd = CLibevent.socket(address.isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            guard let connection = Connection(loop: loop, socket: fd, connected: false) else {
                CLibevent.close(fd)
                return nil
            }
            connection.delegate = delegate
            connection.socket?.startConnect(to: address)
            return connection
        }
        guard let connection = unconnectedTLS(context: tls.context, serverName: tls.serverName, port: address.port,
                                              on: loop, delegate: delegate), let bev = connection.bev else { return nil }
        // A synchronous failure is also reported through the deferred event callback.
        _ = address.withSockaddr { sa, length in bufferevent_socket_connect(bev, sa, length) }
        return connection
    }

    /// The socket descriptor, or -1 once closed.
    private var descriptor: Int32 {
        if let socket { return socket.fd }
        if let bev { return bufferevent_getfd(bev) }
        return -1
    }


    /// A non-blocking `recv(MSG_PEEK)` (one syscall, nothing consumed): whether a connection that
    /// should be quiet — a pooled one, or one whose response just completed — has received
    /// anything or been closed by its peer. For TLS it sees raw records (a close_notify counts as
    /// data), which is as disqualifying for reuse as bytes.
    public func peekPeer() -> PeerActivity {
        guard isOpen else { return .closed }
        if !input.isEmpty { return .data }
        var byte: UInt8 = 0
        let result = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if result > 0 { return .data }
        if result == 0 { return .closed }
        let code = shim_errno()
        return code == EAGAIN || code == EWOULDBLOCK || code == EINTR ? .quiet : .closed
    }

    /// ``peekPeer()`` without a syscall: what has already been seen (buffered bytes, or an
    /// end reported to the delegate). Bytes or a close still in the kernel are not seen.
    public var seenPeerActivity: PeerActivity {
        guard isOpen, !peerEnded else { return .closed }
        return input.isEmpty ? .quiet : .data
    }

    /// Whether the socket is still open.
    public var isOpen: Bool { bev != nil || socket != nil }

    /// Starts (or resumes) reading from the socket.
    public func startReading() {
        closeWatch?.suspend()
        if let socket {
            socket.startReading()
        } else if let bev {
            bufferevent_enable(bev, Int16(EV_READ))
        }
    }

    /// Stops reading from the socket (backpressure: the other side is not keeping up).
    ///
    /// A plain socket keeps its read interest registered and only drops it if the peer sends
    /// while paused (most pauses end before it does, and cost no syscall).
    public func stopReading() {
        if let socket {
            socket.stopReading()
            return
        }
        guard let bev else { return }
        bufferevent_disable(bev, Int16(EV_READ))
        watchPausedPeer()
    }

    /// Reading is really off (a bufferevent paused, or a plain socket that got bytes while paused):
    /// from now on a peer that leaves is noticed by polling, if ``reportsCloseWhilePaused``.
    func watchPausedPeer() {
        guard reportsCloseWhilePaused, !lingering else { return }
        if closeWatch == nil {
            closeWatch = Timer(on: loop) { [unowned self] in checkPausedPeer() }
        }
        closeWatch?.schedule(after: Connection.pausedCloseCheck)
    }

    /// While paused: a peer that reset or closed (POLLHUP, POLLERR, POLLRDHUP — none of which
    /// consumes the unread data) ends the connection now; otherwise look again later.
    private func checkPausedPeer() {
        guard isOpen, !lingering else { return }
        if pausedPeerLeft() {
            reportEnd(.endOfStream)
            return
        }
        closeWatch?.schedule(after: Connection.pausedCloseCheck)
    }

    /// Whether the peer of a paused connection reset or closed (one `poll`, nothing consumed).
    func pausedPeerLeft() -> Bool {
        var entry = pollfd(fd: descriptor, events: Connection.pollRDHUP, revents: 0)
        let ready = poll(&entry, 1, 0)
        let gone: Int16 = Int16(POLLHUP) | Int16(POLLERR) | Connection.pollRDHUP
        return ready > 0 && entry.revents & gone != 0
    }

    /// Reports the end of the connection to the delegate, once.
    func reportEnd(_ reason: ConnectionEnd) {
        guard !peerEnded else { return }
        peerEnded = true
        switch reason {
        case .endOfStream: peerClosedInput = true
        case .socketError: socketFailed = true
        default: break
        }
        closeWatch?.suspend()
        delegate?.connection(self, didEnd: reason)
    }

    /// Limits how much is read ahead into ``input`` before reading pauses by itself (it resumes
    /// once the input is consumed below the limit).
    public func setReadHighWatermark(_ bytes: Int) {
        if let socket {
            socket.highWatermark = bytes
        } else if let bev {
            bufferevent_setwatermark(bev, Int16(EV_READ), 0, bytes)
        }
    }

    /// Sets read/write inactivity timeouts; `nil` clears one.
    public func setTimeouts(read: Duration?, write: Duration?) {
        guard isOpen else { return }
        // Re-arming costs event_add calls on both events: skip when nothing changes (the proxy
        // sets the same timeouts at several points of every exchange).
        if appliedTimeouts?.read == read && appliedTimeouts?.write == write { return }
        appliedTimeouts = (read, write)
        var readTV = read.map(loop.timeval)
        var writeTV = write.map(loop.timeval)
        if let socket {
            socket.setTimeouts(read: readTV, write: writeTV)
            return
        }
        guard let bev else { return }
        withOptionalPointer(&readTV) { r in
            withOptionalPointer(&writeTV) { w in _ = bufferevent_set_timeouts(bev, r, w) }
        }
    }

    /// Appends bytes to the output (sent as the socket allows).
    public func write(_ bytes: [UInt8]) {
        output.append(bytes)
    }

    /// Closes the socket (unsent bytes are dropped) and drops the delegate. Idempotent; safe
    /// inside callbacks.
    public func close() {
        reportFlushed()
        lingerCap = nil
        closeWatch?.cancel()
        closeWatch = nil
        if let socket {
            socket.close()
            self.socket = nil
            // Nothing more goes out or comes in: give the chunks back now, not at deinit.
            input.drain(input.count)
            output.drain(output.count)
        } else if let bev {
            if isTLS && isConnected && !tlsFailed, let ssl = bufferevent_openssl_get_ssl(bev) {
                // Freed without a close_notify exchange, OpenSSL would mark the session "bad"
                // and never resume it: a backend closing after every response (or our own
                // close of an idle connection) is a clean end, not a broken session.
                SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN)
            }
            bufferevent_free(bev)
            self.bev = nil
        } else {
            return
        }
        delegate = nil
        selfRetain?.release()
        selfRetain = nil
    }

    /// Closes with a reset (SO_LINGER 0): unsent bytes are dropped and the peer learns at once
    /// that the exchange was abandoned, instead of after reading everything still queued.
    public func reset() {
        if isOpen {
            var off = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &off, socklen_t(MemoryLayout<linger>.size))
        }
        close()
    }

    /// Sends what is queued, then closes gracefully: half-closes the write side and discards
    /// incoming bytes for a short while, so a client still sending does not get a reset that
    /// would destroy the response it has not read yet (a "lingering close").
    ///
    /// `flushed` runs once everything queued has been handed to the kernel (or the connection
    /// ended first): from then on, stopping the process loses nothing.
    public func closeAfterFlush(linger: Duration = .seconds(2), flushed: (() -> Void)? = nil) {
        guard isOpen, !lingering else {
            flushed?()
            return
        }
        onFlushed = flushed
        lingering = true
        lingerDuration = linger
        delegate = nil
        input.drain(input.count)
        // While the rest of the response is still going out only a stalled writer ends it; the
        // linger clock starts once everything is with the kernel (see shutdownWrite).
        setTimeouts(read: nil, write: .seconds(30))
        startReading()
        if output.isEmpty && !(socket?.flushPending ?? false) { shutdownWrite() }
    }

    /// Half-closes once everything queued is sent, but keeps reading and reporting to the
    /// delegate (a CONNECT tunnel whose other side finished sending).
    public func finishWriting() {
        guard isOpen else { return }
        halfClosing = true
        if output.isEmpty { shutdownWrite() }
    }

    private func shutdownWrite() {
        guard isOpen, !shutDownWrite else { return }
        shutDownWrite = true
        if lingering && (socketFailed || (peerClosedInput && receiveBufferAtEndOfStream())) {
            // Everything is with the kernel and the peer will send nothing more (or reset the
            // connection): lingering would only hold the descriptor, for up to three lingers,
            // after every client that leaves first. (With bytes still unread after an end of
            // stream, close(2) would send a reset; linger then.)
            close()
            return
        }
        _ = shutdown(descriptor, Int32(SHUT_WR))
        if lingering {
            // Discard what the peer still sends for a short while (so it reads our answer
            // rather than a reset), but never longer than a few lingers in all.
            setTimeouts(read: lingerDuration, write: nil)
            lingerCap = Timer(on: loop, after: lingerDuration * 3) { [unowned self] in close() }
        }
        reportFlushed()
    }

    /// Whether the socket's receive buffer holds nothing but the peer's end of stream (one
    /// peek, nothing consumed).
    private func receiveBufferAtEndOfStream() -> Bool {
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    private func reportFlushed() {
        let callback = onFlushed
        onFlushed = nil
        callback?()
    }

    // MARK: - callbacks (from Trampolines.swift and Connection+Socket.swift)

    func handleReadable() {
        if lingering { input.drain(input.count); return }
        delegate?.connectionDidRead(self)
    }

    /// Everything queued was handed to the kernel.
    func handleWritable() {
        if halfClosing && output.isEmpty { shutdownWrite() }
        if lingering {
            // A write callback queued before the final bytes were added can arrive late: only
            // half-close once everything has really been handed to the kernel.
            if output.isEmpty { shutdownWrite() }
            return
        }
        delegate?.connectionDidDrain(self)
    }

    /// An outgoing plain connection finished connecting.
    func handleConnected() {
        isConnected = true
        _ = shim_set_nodelay(descriptor)
        delegate?.connectionDidConnect(self)
    }

    /// The socket ended (end of stream, error, timeout): a lingering close is complete, anything
    /// else is reported.
    func handleEnd(_ reason: ConnectionEnd) {
        if lingering { close(); return }
        reportEnd(reason)
    }

    func handleEvent(_ what: Int32) {
        guard let bev else { return }
        if what & Int32(BEV_EVENT_CONNECTED) != 0 {
            if isTLS, let ssl = bufferevent_openssl_get_ssl(bev) { tlsSessionResumed = SSL_session_reused(ssl) == 1 }
            handleConnected()
            return
        }
        if lingering { close(); return }
        let reason: ConnectionEnd
        if what & Int32(BEV_EVENT_TIMEOUT) != 0 {
            reason = .timeout
        } else if what & Int32(BEV_EVENT_EOF) != 0 {
            reason = .endOfStream
        } else {
            let dnsError = bufferevent_socket_get_dns_error(bev)
            if dnsError != 0 {
                reason = .dnsFailure(message: String(cString: evutil_gai_strerror(dnsError)))
            } else if isTLS, let failure = tlsFailure(bev) {
                tlsFailed = true
                reason = failure
            } else {
                let code = shim_errno()
                reason = code == ECONNREFUSED ? .refused : .socketError(errno: code)
            }
        }
        // A bufferevent may report more than one event (end of stream, then a failed write):
        // the delegate hears the first, as before.
        peerEnded = true
        delegate?.connection(self, didEnd: reason)
    }
}

extension Connection {
    /// Classifies a TLS failure: certificate verification (with OpenSSL's reason) or protocol.
    fileprivate func tlsFailure(_ bev: OpaquePointer) -> ConnectionEnd? {
        var codes: [UInt] = []
        while case let code = bufferevent_get_openssl_error(bev), code != 0 { codes.append(code) }
        guard let ssl = bufferevent_openssl_get_ssl(bev) else { return nil }
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            return .tlsCertificate(message: String(cString: X509_verify_cert_error_string(verify)))
        }
        // SSL_get_error codes (small numbers) are mixed into the queue: keep real library errors.
        let messages = codes.filter { $0 > 0xff }.map(TLSClientContext.errorString)
        if messages.isEmpty && !isConnected {
            return .tlsProtocol(message: "the TLS handshake failed")
        }
        return messages.isEmpty ? nil : .tlsProtocol(message: messages.joined(separator: "; "))
    }
}

