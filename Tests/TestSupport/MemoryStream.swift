import EventLoop

/// A ``ByteStream`` in memory, driven by a test step by step the way SwiftNIO's
/// `EmbeddedChannel` is: the test plays the peer (``receive(_:)``, ``peerReads(max:)``,
/// ``end(_:)``, ``connect()``) and looks at what the owner did (``isReading``, ``timeouts``,
/// ``ending``). No socket, no loop iteration: every event reaches the delegate inside the
/// test's call, on the test's thread.
///
/// Like a socket, bytes that arrive while reading is paused wait "in the kernel" (``unread``)
/// until the owner reads again and the test calls ``deliver()``.
public final class MemoryStream: ByteStream {
    /// How the stream was ended by its owner.
    public enum Ending: Equatable, Sendable {
        /// Still open.
        case open
        /// ``close()``: unsent bytes dropped.
        case closed
        /// ``reset()``: closed with a reset.
        case reset
        /// ``closeAfterFlush(linger:flushed:)`` and everything queued was taken by the peer.
        case closedAfterFlush
        /// ``closeAfterFlush(linger:flushed:)`` with bytes still queued.
        case flushing
    }

    public let loop: EventLoop
    public var delegate: (any ConnectionDelegate)?
    private let inputBuffer = OwnedEventBuffer()
    private let outputBuffer = OwnedEventBuffer()
    public var input: EventBuffer { inputBuffer.buffer }
    public var output: EventBuffer { outputBuffer.buffer }
    public private(set) var isConnected: Bool
    public var isOpen: Bool { ending == .open || ending == .flushing }
    public var isTLS: Bool { false }
    public var tlsSessionResumed: Bool { false }
    public var reportsCloseWhilePaused = false
    /// Whether the owner wants bytes.
    public private(set) var isReading = false
    /// The owner's read-ahead limit.
    public private(set) var readHighWatermark = 0
    /// The inactivity timeouts the owner set last.
    public private(set) var timeouts: (read: Duration?, write: Duration?) = (nil, nil)
    /// How the owner ended the stream.
    public private(set) var ending = Ending.open
    /// Bytes that arrived while the owner was not reading.
    public private(set) var unread: [UInt8] = []
    /// Everything the peer has taken from ``output`` so far.
    public private(set) var delivered: [UInt8] = []
    /// Bytes that were still queued when the owner closed (dropped, as a socket would).
    public private(set) var droppedAtClose = 0
    /// Whether the owner half-closed its sending side (``finishWriting()``).
    public private(set) var finishedWriting = false
    private var flushed: (() -> Void)?
    private var peerGone = false

    /// An accepted stream (`connected`), or an outgoing one that connects on ``connect()``.
    public init(loop: EventLoop, connected: Bool = true) {
        self.loop = loop
        self.isConnected = connected
    }

    // MARK: - the owner's side (ByteStream)

    public func startReading() { isReading = true }
    public func stopReading() { isReading = false }
    public func setReadHighWatermark(_ bytes: Int) { readHighWatermark = bytes }
    public func setTimeouts(read: Duration?, write: Duration?) { timeouts = (read, write) }
    public func write(_ bytes: [UInt8]) { output.append(bytes) }

    public func close() {
        guard isOpen else { return }
        droppedAtClose = output.count
        output.drain(output.count)
        input.drain(input.count)
        ending = .closed
        delegate = nil
        reportFlushed()
    }

    public func reset() {
        guard isOpen else { return }
        close()
        ending = .reset
    }

    public func closeAfterFlush(linger: Duration, flushed: (() -> Void)?) {
        guard ending == .open else {
            flushed?()
            return
        }
        delegate = nil
        input.drain(input.count)
        self.flushed = flushed
        ending = .flushing
        if output.isEmpty {
            ending = .closedAfterFlush
            reportFlushed()
        }
    }

    public func finishWriting() { finishedWriting = true }

    public func peekPeer() -> PeerActivity { seenPeerActivity }

    public var seenPeerActivity: PeerActivity {
        if !isOpen || peerGone { return .closed }
        return input.isEmpty && unread.isEmpty ? .quiet : .data
    }

    // MARK: - the peer's side (the test)

    /// The peer sends `bytes`: read at once while the owner reads (``ConnectionDelegate/connectionDidRead(_:)``),
    /// else kept until ``deliver()``.
    public func receive(_ bytes: [UInt8]) {
        unread.append(contentsOf: bytes)
        deliver()
    }

    /// The peer sends `text` (UTF-8).
    public func receive(_ text: String) { receive(Array(text.utf8)) }

    /// Hands what arrived while paused to an owner that reads again (one loop iteration).
    public func deliver() {
        guard isOpen, isReading, !unread.isEmpty, let delegate else { return }
        input.append(unread)
        unread.removeAll()
        delegate.connectionDidRead(self)
    }

    /// The peer takes up to `max` bytes of what the owner queued; once the output is empty the
    /// owner hears ``ConnectionDelegate/connectionDidDrain(_:)`` (or a lingering close ends).
    @discardableResult
    public func peerReads(max: Int = .max) -> [UInt8] {
        let taken = output.peekBytes(max: min(max, output.count))
        output.drain(taken.count)
        delivered.append(contentsOf: taken)
        if output.isEmpty {
            if ending == .flushing {
                ending = .closedAfterFlush
                reportFlushed()
            } else if isOpen {
                delegate?.connectionDidDrain(self)
            }
        }
        return taken
    }

    /// Everything the peer has taken so far, as text, after taking what is queued now.
    public func readAll() -> String {
        peerReads()
        return String(decoding: delivered, as: UTF8.self)
    }

    /// Forgets what the peer has taken so far (a test reading responses one by one).
    public func clearDelivered() { delivered.removeAll() }

    /// The stream ends from the peer's side (end of stream, reset, timeout): reported at once.
    public func end(_ reason: ConnectionEnd) {
        peerGone = true
        guard isOpen, let delegate else { return }
        delegate.connection(self, didEnd: reason)
    }

    /// An outgoing stream completes its connect.
    public func connect() {
        guard !isConnected, isOpen else { return }
        isConnected = true
        delegate?.connectionDidConnect(self)
    }

    private func reportFlushed() {
        let callback = flushed
        flushed = nil
        callback?()
    }
}
