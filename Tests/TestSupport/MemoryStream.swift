import EventLoop

/// A ``ByteStream`` in memory, driven by a test step by step the way SwiftNIO's
/// `EmbeddedChannel` is: the test plays the peer (``receive(_:)``, ``peerReads(max:)``,
/// ``end(_:)``, ``connect()``) and looks at what the owner did (``isReading``, ``timeouts``,
/// ``ending``). No socket, no loop iteration: every event reaches the delegate inside the
/// test's call, on the test's thread.
///
/// Like a socket, bytes that arrive while reading is paused wait "in the kernel" (``unread``)
/// until the owner reads again and the test calls ``deliver()``.
///
/// It can be intercepted as a socket can: the owner peeks at the first byte
/// (``peekFirstByte(_:)``) and continues as a TLS server (``startTLSServer(context:)``); the
/// test plays the app's side of TLS with ``sendClientHello(serverName:applicationProtocol:)``
/// and ``completeHandshake()``. No bytes are encrypted: after the handshake the stream carries
/// the same plaintext, and reports the server name and protocol the "client" asked for.
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
    public private(set) var isTLS = false
    public private(set) var tlsServerName: String?
    public private(set) var tlsApplicationProtocol: String?
    /// The TLS server context the owner continued with (``startTLSServer(context:)``).
    public private(set) var tlsServerContext: TLSServerContext?
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
    /// The owner's wait for the first byte (``peekFirstByte(_:)``).
    private var firstByteWaiter: ((UInt8?) -> Void)?
    /// What the app's ClientHello asked for, until the owner starts TLS.
    private var clientHello: (serverName: String?, applicationProtocol: String?)?
    /// The handshake started by ``startTLSServer(context:)``, until ``completeHandshake()``.
    private var handshaking = false

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
        firstByteWaiter = nil
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

    /// How many times ``peekPeer()`` looked (a socket's would be a syscall each).
    public private(set) var peeks = 0
    /// What waits in the kernel unseen by the loop (``arriveUnseen(_:)``): only a peek sees it.
    public private(set) var inKernel: PeerActivity?

    public func peekPeer() -> PeerActivity {
        peeks += 1
        if let inKernel, seenPeerActivity == .quiet { return inKernel }
        return seenPeerActivity
    }

    /// The peer's bytes or close reach the kernel after the loop's last read: the owner does not
    /// see them (``seenPeerActivity``) until it peeks (``peekPeer()``), as with a socket.
    public func arriveUnseen(_ activity: PeerActivity) { inKernel = activity }

    public func peekFirstByte(_ body: @escaping (UInt8?) -> Void) -> Bool {
        guard isOpen, input.isEmpty, firstByteWaiter == nil else { return false }
        firstByteWaiter = body
        if peerGone || !unread.isEmpty { answerFirstByte() }
        return true
    }

    /// Continues as the TLS server once the app's ClientHello is all that arrived (the stream
    /// itself, as the socket moves to a TLS stream): its handshake completes when the test says
    /// (``completeHandshake()``).
    public func startTLSServer(context: TLSServerContext) -> (any ByteStream)? {
        guard isOpen, !isTLS, input.isEmpty, output.isEmpty, let hello = clientHello,
              unread == [Self.clientHelloByte] else { return nil }
        unread.removeAll()
        clientHello = nil
        isTLS = true
        isConnected = false
        handshaking = true
        tlsServerContext = context
        tlsServerName = hello.serverName
        tlsApplicationProtocol = hello.applicationProtocol
        return self
    }

    public var seenPeerActivity: PeerActivity {
        if !isOpen || peerGone { return .closed }
        return input.isEmpty && unread.isEmpty ? .quiet : .data
    }

    // MARK: - the peer's side (the test)

    /// The peer sends `bytes`: read at once while the owner reads (``ConnectionDelegate/connectionDidRead(_:)``),
    /// else kept until ``deliver()``.
    public func receive(_ bytes: [UInt8]) {
        unread.append(contentsOf: bytes)
        if firstByteWaiter != nil {
            answerFirstByte()
            return
        }
        deliver()
    }

    /// The first byte of a TLS record carrying a handshake message (RFC 8446 §5.1).
    public static let clientHelloByte: UInt8 = 0x16

    /// The app starts TLS in the tunnel: its ClientHello (one handshake-record byte here) asks
    /// for `serverName` (SNI) and offers `applicationProtocol` (ALPN).
    public func sendClientHello(serverName: String?, applicationProtocol: String? = "http/1.1") {
        clientHello = (serverName, applicationProtocol)
        receive([Self.clientHelloByte])
    }

    /// The TLS handshake the owner started completes: it hears
    /// ``ConnectionDelegate/connectionDidConnect(_:)``.
    public func completeHandshake() {
        guard handshaking, isOpen else { return }
        handshaking = false
        isConnected = true
        delegate?.connectionDidConnect(self)
    }

    /// The peer sends `text` (UTF-8).
    public func receive(_ text: String) { receive(Array(text.utf8)) }

    /// The owner hears ``ConnectionDelegate/connectionDidRead(_:)`` with nothing new to read:
    /// what a deferred read callback does when another callback already took its bytes.
    public func repeatReadCallback() {
        guard isOpen, let delegate else { return }
        delegate.connectionDidRead(self)
    }

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
        if firstByteWaiter != nil {
            answerFirstByte()
            return
        }
        guard isOpen, let delegate else { return }
        delegate.connection(self, didEnd: reason)
    }

    /// The peer's close has arrived but is not reported yet (it came with the last bytes, or
    /// waits in the kernel for the next loop iteration): the owner sees it in
    /// ``seenPeerActivity`` and with a peek, and hears of it on ``end(_:)``.
    public func endUnreported() { peerGone = true }

    /// An outgoing stream completes its connect.
    public func connect() {
        guard !isConnected, isOpen else { return }
        isConnected = true
        delegate?.connectionDidConnect(self)
    }

    /// Tells the owner's first-byte wait what came (the bytes stay unread); reading stops.
    private func answerFirstByte() {
        guard let waiter = firstByteWaiter else { return }
        firstByteWaiter = nil
        isReading = false
        waiter(unread.first)
    }

    private func reportFlushed() {
        let callback = flushed
        flushed = nil
        callback?()
    }
}
