import CLibevent
import Glibc

/// A TCP ``ByteStream`` driven directly (accepted connections and connects to a resolved
/// address, plain or TLS — the whole proxy data path): reads of up to 128 KiB straight into
/// reserved ``input`` space with no `FIONREAD`, writes attempted once per loop iteration as soon
/// as bytes are queued (write interest is asked for only when the kernel would block), and read
/// interest that stays registered across requests (a pause takes effect lazily, only if the
/// peer sends while paused). A keep-alive request costs two reads, two writes and two
/// `epoll_wait`s, and no `epoll_ctl`. The socket work itself is ``SocketChannel``'s; TLS is its
/// ``TLSLayer``'s, between the socket and the same buffers.
///
/// Owns its descriptor, its two events and its two evbuffers. Keeps itself alive (an
/// `Unmanaged` retain) while the socket is open and holds its delegate strongly; ``close()``
/// releases the C side first — which clears the C callbacks — and only then drops both.
public final class SocketConnection: SocketStream {
    public let loop: EventLoop
    public var delegate: (any ConnectionDelegate)?
    /// The socket channel. Lives as long as the connection (a `let`: calls into it retain
    /// nothing); used only while ``isOpen``.
    let channel: SocketChannel
    /// The channel has not been closed (or given away).
    public private(set) var isOpen = true
    private var selfRetain: Unmanaged<SocketConnection>?
    public private(set) var isConnected: Bool
    public var isTLS: Bool { channel.tls != nil }
    public var tlsSessionResumed: Bool { channel.tls?.sessionResumed ?? false }
    /// The server name (SNI) a TLS client asked for, on the server side of a completed handshake.
    public var tlsServerName: String? { channel.tls?.serverName }
    /// The application protocol (ALPN) the completed handshake agreed on.
    public var tlsApplicationProtocol: String? { channel.tls?.applicationProtocol }
    public var reportsCloseWhilePaused = false
    public let input: EventBuffer
    /// What is queued to send, without the flush scheduling of ``output``.
    let queuedOutput: EventBuffer

    /// The bytes to send. Asking for it puts the connection on the loop's flush list (once per
    /// flush, and not while a write waits for the socket): whatever is queued by the time the
    /// loop flushes, at the end of this read dispatch or iteration, goes out then. Every writer
    /// reaches the buffer through here, so none can queue bytes that are not flushed; a caller
    /// that only reads its length costs a flush that finds nothing (``flushScheduled()``).
    public var output: EventBuffer {
        if isOpen { channel.outputRequested(by: self) }
        return queuedOutput
    }

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
    /// The receive window of a connection to a loopback backend (set before the connect
    /// completes); nil: the kernel autotunes it.
    var receiveWindow: ReceiveWindow?
    /// Waits for the peer's first byte without reading it (``peekFirstByte(_:)``).
    private var firstByteWaiter: ((UInt8?) -> Void)?

    /// A stream over `fd` (connected, or with a connect in progress); with `tls`, TLS over it
    /// (the handshake runs once the socket is connected, and the stream reports itself connected
    /// only when it completed).
    init?(loop: EventLoop, socket fd: Int32, connected: Bool, tls: TLSLayer? = nil) {
        guard let inputBuffer = evbuffer_new() else { return nil }
        guard let outputBuffer = evbuffer_new() else {
            evbuffer_free(inputBuffer)
            return nil
        }
        self.loop = loop
        self.isConnected = connected && tls == nil
        self.input = EventBuffer(inputBuffer)
        self.queuedOutput = EventBuffer(outputBuffer)
        self.channel = SocketChannel(fd: fd, loop: loop, input: inputBuffer, output: outputBuffer, tls: tls)
        let retained = Unmanaged.passRetained(self)
        guard channel.attach(context: retained.toOpaque()) else {
            isOpen = false
            retained.release()
            return nil
        }
        selfRetain = retained
        // An accepted TLS socket: the client's first flight starts the handshake, from the loop.
        if connected, tls != nil { channel.awaitHandshake() }
    }

    deinit {
        evbuffer_free(input.raw)
        evbuffer_free(queuedOutput.raw)
    }

    var descriptor: Int32 { isOpen ? channel.fd : -1 }
    var writePending: Bool { isOpen && channel.flushPending }

    /// Starts connecting to `address` (the outcome comes from the loop).
    func startConnect(to address: SocketAddress) {
        if isOpen { channel.startConnect(to: address) }
    }

    // MARK: - ByteStream

    public func startReading() {
        closeWatch?.suspend()
        if isOpen { channel.startReading() }
    }

    /// Keeps read interest registered; it is dropped only if the peer sends while paused (most
    /// pauses end before it does, and cost no syscall).
    public func stopReading() {
        if isOpen { channel.stopReading() }
    }

    public func setReadHighWatermark(_ bytes: Int) {
        if isOpen { channel.highWatermark = bytes }
    }

    public func limitLingeringDiscard(to bytes: Int) {
        lingerDiscardLimit = bytes
    }

    public func setTimeouts(read: Duration?, write: Duration?) {
        cachedSetTimeouts(read: read, write: write)
    }

    func applyTimeouts(read: Duration?, write: Duration?) {
        if isOpen { channel.setTimeouts(read: read, write: write.map(EventLoop.timeval)) }
    }

    /// A TLS server says `close_notify` before its FIN (``TLSLayer/sendCloseNotify()``).
    func shutdownSending() {
        if let tls = channel.tls, case .server = tls.role { tls.sendCloseNotify() }
        _ = shutdown(descriptor, Int32(SHUT_WR))
    }

    public func write(_ bytes: [UInt8]) {
        output.append(bytes)
    }

    public func close() {
        // The waiter's closure holds its owner: never past the stream's end.
        firstByteWaiter = nil
        endLifecycle()
        guard isOpen else { return }
        channel.close()
        isOpen = false
        // Nothing more goes out or comes in: give the chunks back now, not at deinit.
        input.drain(input.count)
        queuedOutput.drain(queuedOutput.count)
        delegate = nil
        selfRetain?.release()
        selfRetain = nil
    }

    public func reset() { resetSocket() }

    /// Calls `body` once, from the loop, with the first byte the peer sends, peeked: it stays in
    /// the kernel for whoever reads next (a TLS server, or this stream once reading starts
    /// again). `nil` when the peer closes or fails first; the read timeout still ends the stream
    /// through its delegate. Reading is stopped when `body` runs. `false` (nothing armed) when
    /// the stream is closed or has unread input.
    public func peekFirstByte(_ body: @escaping (UInt8?) -> Void) -> Bool {
        guard isOpen, !isTLS, input.isEmpty, firstByteWaiter == nil else { return false }
        firstByteWaiter = body
        channel.startReading()
        return true
    }

    /// The socket moves to a new TLS server stream, as ``Connection/acceptTLS(socket:context:on:)``
    /// makes, and this stream ends (its delegate is not told).
    public func startTLSServer(context: TLSServerContext) -> (any ByteStream)? {
        guard let fd = detachDescriptor() else { return nil }
        return Connection.acceptTLS(socket: fd, context: context, on: loop)
    }

    /// Gives the socket to a new owner (``startTLSServer(context:)``): frees this
    /// stream's events without closing the descriptor and ends the stream without telling its
    /// delegate. `nil` (and nothing changes) when it is closed or bytes are still unread or unsent:
    /// they would be lost. (A flush still scheduled finds nothing to send, and a closed stream.)
    func detachDescriptor() -> Int32? {
        guard isOpen, !isTLS, input.isEmpty, queuedOutput.isEmpty, !lingering, !halfClosing else { return nil }
        let fd = channel.fd
        firstByteWaiter = nil
        endLifecycle()
        channel.close(keepingDescriptor: true)
        isOpen = false
        delegate = nil
        selfRetain?.release()
        selfRetain = nil
        return fd
    }

    public func closeAfterFlush(linger: Duration, flushed: (() -> Void)?) {
        lingeringClose(linger: linger, flushed: flushed)
    }

    public func finishWriting() { halfClose() }

    public func peekPeer() -> PeerActivity {
        guard let tls = channel.tls, isOpen, isConnected else { return socketPeekPeer() }
        // The socket may hold records without application data (a session ticket): only
        // OpenSSL can tell.
        return input.isEmpty ? tls.peek() : .data
    }

    public var seenPeerActivity: PeerActivity { socketSeenPeerActivity }

    public func widenReceiveWindow(taken: Int) {
        guard isOpen, isConnected, let change = receiveWindow?.grow(taken: taken) else { return }
        apply(change)
    }

    public func narrowReceiveWindow() {
        guard isOpen, isConnected, let change = receiveWindow?.reset() else { return }
        apply(change)
    }

    private func apply(_ change: ReceiveWindow.Change) {
        switch change {
        case .size(let bytes): _ = shim_set_receive_window(channel.fd, Int32(bytes))
        case .autotune: _ = shim_autotune_buffers(channel.fd)
        }
    }

    // MARK: - the channel's events (from Trampolines.swift)

    /// The socket is readable, or its read timeout expired.
    func socketReadable(_ what: Int16) {
        guard isOpen else { return }
        if Int32(what) & EV_TIMEOUT != 0 {
            firstByteWaiter = nil
            channel.timedOut()
            handleEnd(.timeout)
            return
        }
        if let tls = channel.tls, tlsTookReadable(tls) { return }
        if let waiter = firstByteWaiter {
            var byte: UInt8 = 0
            let got = recv(channel.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            let code = got < 0 ? shim_errno() : 0
            if got < 0 && (code == EAGAIN || code == EWOULDBLOCK || code == EINTR) { return }
            firstByteWaiter = nil
            channel.stopReading()
            waiter(got == 1 ? byte : nil)
            return
        }
        switch channel.read() {
        case .bytes:
            handleReadable()
            // The delegate may have closed the connection.
            if isOpen { channel.suspendIfFull() }
        case .nothing, .suspended:
            break
        case .pausedWithData:
            // Bytes (or a close) arrived while paused: reading is now really off, and a peer
            // that leaves is noticed by polling.
            guard reportsCloseWhilePaused, !lingering else { return }
            if pausedPeerLeft() { reportEnd(.endOfStream) } else { watchPausedPeer() }
        case .ended(let reason):
            handleEnd(reason)
        }
    }

    /// The socket is writable (or a connect completed), or the write timeout expired.
    func socketWritable(_ what: Int16) {
        guard isOpen else { return }
        if channel.connecting {
            if let failure = channel.finishConnect() {
                handleEnd(failure)
                return
            }
            _ = shim_set_nodelay(descriptor)
            // Set once connected, not before: a receive buffer fixed before the SYN would also
            // fix the window scale it offers, and the window could never grow past 64 KiB.
            if receiveWindow != nil { _ = shim_set_receive_buffer(descriptor, Int32(ReceiveWindow.initial)) }
            if let tls = channel.tls {
                // (The connect's write interest is gone: a step that waits needs it again.)
                if !continueHandshakeInTurn(tls) { channel.awaitWritable() }
                return
            }
            isConnected = true
            delegate?.connectionDidConnect(self)
            // Bytes queued while connecting go out now.
            if isOpen, !channel.flushPending, !queuedOutput.isEmpty { flushOutput() }
            return
        }
        if Int32(what) & EV_TIMEOUT != 0 {
            channel.timedOut()
            handleEnd(.timeout)
            return
        }
        if let tls = channel.tls, tlsTookWritable(tls) { return }
        flushOutput()
    }

    /// A readiness of a TLS stream before reading: the handshake's (taken: true), or a write
    /// that waited for it goes on first. Out of line: the plain read path stays small.
    @inline(never)
    private func tlsTookReadable(_ tls: TLSLayer) -> Bool {
        if !tls.isEstablished {
            _ = continueHandshakeInTurn(tls)
            return true
        }
        if tls.writeWantsRead {
            tls.writeWantsRead = false
            flushOutput()
            // With reading paused the read below would drop the registration a write that
            // needs to read again has just made.
            return !isOpen || !channel.readWanted
        }
        return false
    }

    /// A writability of a TLS stream before writing: the handshake's (taken: true), or a read
    /// that waited for it goes on first.
    @inline(never)
    private func tlsTookWritable(_ tls: TLSLayer) -> Bool {
        if !tls.isEstablished {
            _ = continueHandshakeInTurn(tls)
            return true
        }
        if tls.readWantsWrite {
            // A read waited for this writability: reading is registered again and goes on now;
            // the write below may find nothing queued.
            tls.readWantsWrite = false
            if channel.readWanted { channel.startReading() }
            socketReadable(Int16(EV_READ))
            guard isOpen else { return true }
            if queuedOutput.isEmpty {
                // Still waiting (the read needed to write again): keep write interest.
                if !tls.readWantsWrite { channel.disarmWrite() }
                return true
            }
        }
        return false
    }

    /// Runs a handshake step if the loop has a turn left in this iteration
    /// (``EventLoop/takeHandshakeTurn()``); false when the step waits: the socket, still
    /// readable or writable, calls again in the next iteration (its event is level-triggered).
    private func continueHandshakeInTurn(_ tls: TLSLayer) -> Bool {
        guard loop.takeHandshakeTurn() else { return false }
        continueHandshake(tls)
        return true
    }

    /// Runs the TLS handshake on; once it completes, the stream is connected: the delegate
    /// hears it, and what was queued meanwhile goes out.
    private func continueHandshake(_ tls: TLSLayer) {
        switch channel.continueHandshake(tls) {
        case .waiting:
            break
        case .failed(let reason):
            handleEnd(reason)
        case .done:
            isConnected = true
            delegate?.connectionDidConnect(self)
            guard isOpen else { return }
            if !channel.flushPending, !queuedOutput.isEmpty { flushOutput() }
            // The peer's first bytes may have come with its last handshake flight.
            if isOpen, channel.readWanted, tls.hasBufferedInput { channel.startReading() }
        }
    }

    /// Called by the loop's flush pass for a stream that queued bytes this iteration.
    func flushScheduled() {
        guard isOpen else { return }
        channel.flushPending = false
        let length = queuedOutput.count
        if length == 0 {
            // The output was asked for and nothing was queued (its length was read, say): no
            // write, and no drain to report (a delegate that reads the length when told of a
            // drain would otherwise be told again, and again). Only a close that waited for
            // this flush goes on.
            if lingering || halfClosing { shutdownWriting() }
            return
        }
        flushOutput(length: length)
    }

    /// Writes what is queued; `length`: its size when the caller just read it.
    private func flushOutput(length: Int? = nil) {
        // Nothing goes out before a TLS handshake completed (it flushes then).
        guard isOpen, isConnected || channel.tls == nil else { return }
        switch length.map(channel.write(length:)) ?? channel.write() {
        case .drained: handleWritable()
        case .waiting: break
        case .failed(let reason): handleEnd(reason)
        }
    }
}
