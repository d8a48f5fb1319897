import CLibevent
import Glibc

/// The plain-socket channel's events, turned into the connection's delegate calls (the same
/// calls a bufferevent's callbacks make in `Connection.swift`).
extension Connection {
    /// The socket is readable, or its read timeout expired.
    func socketReadable(_ what: Int16) {
        guard let socket else { return }
        if Int32(what) & EV_TIMEOUT != 0 {
            socket.timedOut()
            handleEnd(.timeout)
            return
        }
        switch socket.read() {
        case .bytes:
            handleReadable()
            // The delegate may have closed the connection.
            self.socket?.suspendIfFull()
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
        guard let socket else { return }
        if socket.connecting {
            if let failure = socket.finishConnect() {
                handleEnd(failure)
                return
            }
            handleConnected()
            // Bytes queued while connecting go out now.
            if let socket = self.socket, !socket.flushPending, !output.isEmpty { flushOutput() }
            return
        }
        if Int32(what) & EV_TIMEOUT != 0 {
            socket.timedOut()
            handleEnd(.timeout)
            return
        }
        flushOutput()
    }

    /// Called by the loop's flush pass for a connection that queued bytes this iteration.
    func flushScheduled() {
        guard let socket else { return }
        socket.flushPending = false
        flushOutput()
    }

    private func flushOutput() {
        guard let socket else { return }
        switch socket.write() {
        case .drained: handleWritable()
        case .waiting: break
        case .failed(let reason): handleEnd(reason)
        }
    }
}
