import CLibevent
import COpenSSL
import Crypto
import Glibc

/// A ``ByteStream`` carried by a libevent bufferevent: connects by host name (libevent's
/// resolver), plain or TLS as a client (``Role/tlsClient``, verified per its context; OpenSSL
/// behind `bufferevent_openssl`) — what token endpoints, Redis and probes use. The proxy's data
/// path (accepted connections, TLS servers, connects to resolved addresses) is
/// ``SocketConnection``'s.
///
/// Owns its bufferevent (and through it the socket and the `SSL`). Keeps itself alive (an
/// `Unmanaged` retain) while the bufferevent exists and holds its delegate strongly;
/// ``close()`` frees the bufferevent first — which clears the C callbacks — and only then drops
/// both references.
public final class BufferEventConnection: SocketStream {
    /// What the bufferevent carries.
    enum Role {
        /// Plain TCP to a name the bufferevent resolves.
        case plain
        /// TLS, this side the client; `context` is kept alive as long as the connection: its
        /// session slots are reached from OpenSSL's new-session callback through the `SSL`, and
        /// a context may be replaced (a rotated client certificate, a reloaded config) meanwhile.
        case tlsClient(TLSClientContext)
    }

    public let loop: EventLoop
    public var delegate: (any ConnectionDelegate)?
    private var bev: OpaquePointer?
    private var selfRetain: Unmanaged<BufferEventConnection>?
    private let role: Role
    public private(set) var isConnected: Bool
    public private(set) var tlsSessionResumed = false
    public private(set) var tlsApplicationProtocol: String?
    /// A TLS error ended the connection (its session must not be resumed).
    private var tlsFailed = false
    public var reportsCloseWhilePaused = false
    public let input: EventBuffer
    public let output: EventBuffer

    // SocketStream state
    var lingering = false
    var onFlushed: (() -> Void)?
    var lingerDuration: Duration = .seconds(2)
    var lingerCap: Timer?
    var lingerDiscardLimit = Int.max
    var lingerDiscarded = 0
    var halfClosing = false
    var appliedTimeouts: (read: Duration?, write: Duration?)?
    var shutDownWrite = false
    var closeWatch: Timer?
    var peerEnded = false
    var peerClosedInput = false
    var socketFailed = false

    /// Larger single reads/writes than libevent's 16 KiB default: fewer callbacks per body byte.
    static let maxSingleIO = 128 * 1024

    // Deferred callbacks: libevent may report a failed connect (or a numeric-host resolution)
    // synchronously inside the call that started it; deferring keeps every delegate call on a
    // clean stack, never re-entering the caller.
    static let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)

    init(loop: EventLoop, bev: OpaquePointer, role: Role, connected: Bool) {
        self.loop = loop
        self.bev = bev
        self.role = role
        self.isConnected = connected
        self.input = EventBuffer(bufferevent_get_input(bev))
        self.output = EventBuffer(bufferevent_get_output(bev))
        let retained = Unmanaged.passRetained(self)
        selfRetain = retained
        bufferevent_setcb(bev, bufferEventReadTrampoline, bufferEventWriteTrampoline, bufferEventEventTrampoline,
                          retained.toOpaque())
        bufferevent_set_max_single_read(bev, Self.maxSingleIO)
        bufferevent_set_max_single_write(bev, Self.maxSingleIO)
    }

    /// A TLS client bufferevent, not connected yet, for `ssl`. Frees `ssl` on failure.
    static func tlsClient(loop: EventLoop, ssl: OpaquePointer, context: TLSClientContext) -> BufferEventConnection? {
        guard let bev = bufferevent_openssl_socket_new(loop.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options) else {
            SSL_free(ssl)
            return nil
        }
        // Peers often close without close_notify; treat that as end of stream, not an error
        // (close-delimited bodies end exactly that way).
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1)
        return BufferEventConnection(loop: loop, bev: bev, role: .tlsClient(context), connected: false)
    }

    /// Starts connecting by name (resolved by libevent, A and AAAA).
    func connect(host: String, port: Int) {
        guard let bev else { return }
        // A synchronous failure is also reported through the deferred event callback.
        _ = bufferevent_socket_connect_hostname(bev, loop.resolver, AF_UNSPEC, host, Int32(port))
    }

    var descriptor: Int32 { bev.map { bufferevent_getfd($0) } ?? -1 }
    var writePending: Bool { false }
    var queuedOutput: EventBuffer { output }
    public var isOpen: Bool { bev != nil }
    public var isTLS: Bool {
        if case .plain = role { return false }
        return true
    }

    // MARK: - ByteStream

    public func startReading() {
        closeWatch?.suspend()
        if let bev { bufferevent_enable(bev, Int16(EV_READ)) }
    }

    public func stopReading() {
        guard let bev else { return }
        bufferevent_disable(bev, Int16(EV_READ))
        watchPausedPeer()
    }

    public func setReadHighWatermark(_ bytes: Int) {
        if let bev { bufferevent_setwatermark(bev, Int16(EV_READ), 0, bytes) }
    }

    public func limitLingeringDiscard(to bytes: Int) {
        lingerDiscardLimit = bytes
    }

    public func setTimeouts(read: Duration?, write: Duration?) {
        cachedSetTimeouts(read: read, write: write)
    }

    func applyTimeouts(read: Duration?, write: Duration?) {
        guard let bev else { return }
        var readTV = read.map(EventLoop.timeval)
        var writeTV = write.map(EventLoop.timeval)
        withOptionalPointer(&readTV) { r in
            withOptionalPointer(&writeTV) { w in _ = bufferevent_set_timeouts(bev, r, w) }
        }
    }

    func shutdownSending() {
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    public func write(_ bytes: [UInt8]) {
        output.append(bytes)
    }

    public func close() {
        endLifecycle()
        guard let bev else { return }
        if isTLS && isConnected && !tlsFailed, let ssl = bufferevent_openssl_get_ssl(bev) {
            // Freed without a close_notify exchange, OpenSSL would mark the session "bad"
            // and never resume it: a peer closing after every response (or our own close of an
            // idle connection) is a clean end, not a broken session.
            SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN)
        }
        bufferevent_free(bev)
        self.bev = nil
        delegate = nil
        selfRetain?.release()
        selfRetain = nil
    }

    public func reset() { resetSocket() }

    public func closeAfterFlush(linger: Duration, flushed: (() -> Void)?) {
        lingeringClose(linger: linger, flushed: flushed)
    }

    public func finishWriting() { halfClose() }

    public func peekPeer() -> PeerActivity { socketPeekPeer() }

    public var seenPeerActivity: PeerActivity { socketSeenPeerActivity }

    // MARK: - the bufferevent's events (from Trampolines.swift)

    func bufferEventReadable() { handleReadable() }

    func bufferEventWritable() { handleWritable() }

    func bufferEventEvent(_ what: Int32) {
        guard let bev else { return }
        if what & Int32(BEV_EVENT_CONNECTED) != 0 {
            if isTLS, let ssl = bufferevent_openssl_get_ssl(bev) {
                tlsSessionResumed = SSL_session_reused(ssl) == 1
                tlsApplicationProtocol = TLSLayer.negotiatedProtocol(ssl)
            }
            isConnected = true
            _ = shim_set_nodelay(descriptor)
            delegate?.connectionDidConnect(self)
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

    /// Classifies a TLS failure: certificate verification (with OpenSSL's reason) or protocol.
    private func tlsFailure(_ bev: OpaquePointer) -> ConnectionEnd? {
        var codes: [UInt] = []
        while case let code = bufferevent_get_openssl_error(bev), code != 0 { codes.append(code) }
        guard let ssl = bufferevent_openssl_get_ssl(bev) else { return nil }
        if let failure = TLSLayer.certificateFailure(ssl) { return failure }
        // SSL_get_error codes (small numbers) are mixed into the queue: keep real library errors.
        let messages = codes.filter { $0 > 0xff }.map(CryptoError.openSSLErrorString)
        if messages.isEmpty && !isConnected {
            return .tlsProtocol(message: "the TLS handshake failed")
        }
        return messages.isEmpty ? nil : .tlsProtocol(message: messages.joined(separator: "; "))
    }
}
