import CLibevent
import Glibc

/// What every socket-backed ``ByteStream`` does the same way, whatever carries its bytes (a
/// ``SocketConnection``'s own reads and writes, or a ``BufferEventConnection``'s bufferevent):
/// the lingering close, the half close, the watch on a paused peer, the reset, the peek, and
/// reporting the end once.
///
/// Each stream stores the state below itself (no shared base class, no two-mode class); the
/// extension holds the one implementation. Internal: the streams' public members forward here.
protocol SocketStream: ByteStream {
    /// The socket descriptor, or -1 once closed.
    var descriptor: Int32 { get }
    /// Whether a graceful close (``closeAfterFlush(linger:flushed:)``) is under way.
    var lingering: Bool { get set }
    /// Runs once everything queued was handed to the kernel during a graceful close.
    var onFlushed: (() -> Void)? { get set }
    /// How long a lingering close discards what the peer still sends.
    var lingerDuration: Duration { get set }
    /// Ends a lingering close that the peer keeps alive.
    var lingerCap: Timer? { get set }
    /// Most bytes a lingering close discards before it closes at once (``ByteStream/limitLingeringDiscard(to:)``).
    var lingerDiscardLimit: Int { get set }
    /// Bytes a lingering close discarded so far.
    var lingerDiscarded: Int { get set }
    /// Half-close once the output is empty (``finishWriting()``), but keep reporting.
    var halfClosing: Bool { get set }
    /// The timeouts applied last (re-arming costs libevent calls: skipped when unchanged).
    var appliedTimeouts: (read: Duration?, write: Duration?)? { get set }
    /// The write side was shut down.
    var shutDownWrite: Bool { get set }
    /// Polls for the peer's close while reading is paused.
    var closeWatch: Timer? { get set }
    /// The end of the stream (peer close, error, timeout) was reported to the delegate.
    var peerEnded: Bool { get set }
    /// The peer closed its sending side (end of stream was read).
    var peerClosedInput: Bool { get set }
    /// The socket failed (a reset, most often): nothing can be drained or delivered any more.
    var socketFailed: Bool { get set }
    /// Bytes are queued and will be written within this loop iteration (plain sockets).
    var writePending: Bool { get }
    /// The output, for the stream's own checks: unlike ``ByteStream/output`` asking for it
    /// schedules no flush (a check made from a flush would schedule the next one).
    var queuedOutput: EventBuffer { get }
    /// Applies read/write inactivity timeouts to the carrier.
    func applyTimeouts(read: Duration?, write: Duration?)
    /// Ends the sending side once everything queued is out (`SHUT_WR`; a TLS server first
    /// sends its `close_notify`).
    func shutdownSending()
}

extension SocketStream {
    /// Linux's POLLRDHUP (the peer shut down its sending side), which Glibc only exports to C
    /// with _GNU_SOURCE.
    static var pollRDHUP: Int16 { 0x2000 }
    /// How often a paused stream checks whether its peer is gone.
    static var pausedCloseCheck: Duration { .milliseconds(50) }

    // MARK: - shared ByteStream behaviour

    func cachedSetTimeouts(read: Duration?, write: Duration?) {
        guard isOpen else { return }
        // Re-arming costs event_add calls on both events: skip when nothing changes (the proxy
        // sets the same timeouts at several points of every exchange).
        if let applied = appliedTimeouts, sameTimeout(applied.read, read), sameTimeout(applied.write, write) { return }
        appliedTimeouts = (read, write)
        applyTimeouts(read: read, write: write)
    }

    func socketPeekPeer() -> PeerActivity {
        guard isOpen else { return .closed }
        if !input.isEmpty { return .data }
        var byte: UInt8 = 0
        let result = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if result > 0 { return .data }
        if result == 0 { return .closed }
        let code = shim_errno()
        return code == EAGAIN || code == EWOULDBLOCK || code == EINTR ? .quiet : .closed
    }

    var socketSeenPeerActivity: PeerActivity {
        guard isOpen, !peerEnded else { return .closed }
        return input.isEmpty ? .quiet : .data
    }

    /// Closes with a reset (SO_LINGER 0): unsent bytes are dropped and the peer learns at once
    /// that the exchange was abandoned, instead of after reading everything still queued.
    func resetSocket() {
        if isOpen {
            var off = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &off, socklen_t(MemoryLayout<linger>.size))
        }
        close()
    }

    /// Sends what is queued, then closes gracefully: half-closes the write side and discards
    /// incoming bytes for a short while, so a client still sending does not get a reset that
    /// would destroy the response it has not read yet (a "lingering close").
    func lingeringClose(linger: Duration, flushed: (() -> Void)?) {
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
        // linger clock starts once everything is with the kernel (see shutdownWriting).
        setTimeouts(read: nil, write: .seconds(30))
        startReading()
        if queuedOutput.isEmpty && !writePending { shutdownWriting() }
    }

    /// Half-closes once everything queued is sent, but keeps reading and reporting to the
    /// delegate (a CONNECT tunnel whose other side finished sending).
    func halfClose() {
        guard isOpen else { return }
        halfClosing = true
        if queuedOutput.isEmpty { shutdownWriting() }
    }

    func shutdownWriting() {
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
        shutdownSending()
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

    func reportFlushed() {
        let callback = onFlushed
        onFlushed = nil
        callback?()
    }

    /// Drops the lifecycle's timers and runs a pending flush callback (on every close).
    func endLifecycle() {
        reportFlushed()
        lingerCap = nil
        closeWatch?.cancel()
        closeWatch = nil
    }

    // MARK: - a paused peer

    /// Reading is really off: from now on a peer that leaves is noticed by polling, if
    /// ``ByteStream/reportsCloseWhilePaused``. (libevent's `EV_CLOSED` cannot do it: epoll
    /// reports a reset as EPOLLHUP|EPOLLERR, which libevent turns into read/write readiness,
    /// never into `EV_CLOSED`; and a read watch would fire for the pending data.)
    func watchPausedPeer() {
        guard reportsCloseWhilePaused, !lingering else { return }
        if closeWatch == nil {
            closeWatch = Timer(on: loop) { [unowned self] in checkPausedPeer() }
        }
        closeWatch?.schedule(after: Self.pausedCloseCheck)
    }

    /// While paused: a peer that reset or closed (POLLHUP, POLLERR, POLLRDHUP — none of which
    /// consumes the unread data) ends the stream now; otherwise look again later.
    private func checkPausedPeer() {
        guard isOpen, !lingering else { return }
        if pausedPeerLeft() {
            reportEnd(.endOfStream)
            return
        }
        closeWatch?.schedule(after: Self.pausedCloseCheck)
    }

    /// Whether the peer of a paused stream reset or closed (one `poll`, nothing consumed).
    func pausedPeerLeft() -> Bool {
        var entry = pollfd(fd: descriptor, events: Self.pollRDHUP, revents: 0)
        let ready = poll(&entry, 1, 0)
        let gone: Int16 = Int16(POLLHUP) | Int16(POLLERR) | Self.pollRDHUP
        return ready > 0 && entry.revents & gone != 0
    }

    // MARK: - events from the carrier

    /// Reports the end of the stream to the delegate, once.
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

    func handleReadable() {
        if lingering {
            lingerDiscarded += input.count
            input.drain(input.count)
            // A peer that keeps sending this much is not waiting for the answer.
            if lingerDiscarded > lingerDiscardLimit { close() }
            return
        }
        delegate?.connectionDidRead(self)
    }

    /// Everything queued was handed to the kernel.
    func handleWritable() {
        if halfClosing && queuedOutput.isEmpty { shutdownWriting() }
        if lingering {
            // A write callback queued before the final bytes were added can arrive late: only
            // half-close once everything has really been handed to the kernel.
            if queuedOutput.isEmpty { shutdownWriting() }
            return
        }
        delegate?.connectionDidDrain(self)
    }

    /// The socket ended (end of stream, error, timeout): a lingering close is complete, anything
    /// else is reported.
    func handleEnd(_ reason: ConnectionEnd) {
        if lingering { close(); return }
        reportEnd(reason)
    }
}

/// Whether two optional timeouts are equal, compared inline on their attoseconds (`Duration`'s
/// `==` is an out-of-line call, and this runs several times per request).
@inline(__always)
private func sameTimeout(_ a: Duration?, _ b: Duration?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case let (a?, b?): return a.attoseconds == b.attoseconds
    default: return false
    }
}
