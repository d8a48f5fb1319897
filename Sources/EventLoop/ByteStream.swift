/// A connected byte stream as the proxy's sessions see it: input and output buffers, reading
/// switched on and off, inactivity deadlines, a graceful or abrupt close, and events in through
/// a ``ConnectionDelegate``.
///
/// ``Connection`` is the one that carries sockets (plain or TLS); test support has an
/// in-memory one that a test drives step by step (bytes in, bytes out, a close, a timeout), so
/// a session runs without sockets. Every stream is confined to its loop's thread.
public protocol ByteStream: AnyObject {
    /// The loop the stream belongs to.
    var loop: EventLoop { get }
    /// Receives events; cleared by a close.
    var delegate: (any ConnectionDelegate)? { get set }
    /// Bytes received and not yet consumed.
    var input: EventBuffer { get }
    /// Bytes queued for sending.
    var output: EventBuffer { get }
    /// Whether an outgoing stream has completed its connect (and TLS handshake); accepted ones are.
    var isConnected: Bool { get }
    /// Whether the stream is still open.
    var isOpen: Bool { get }
    /// Whether the stream is TLS.
    var isTLS: Bool { get }
    /// Whether a TLS handshake resumed an earlier session.
    var tlsSessionResumed: Bool { get }
    /// Whether a peer that leaves while reading is paused is reported then (as an end of stream)
    /// rather than when reading resumes.
    var reportsCloseWhilePaused: Bool { get set }
    /// Starts (or resumes) reading.
    func startReading()
    /// Stops reading (backpressure).
    func stopReading()
    /// Limits how much is read ahead into ``input`` before reading pauses by itself.
    func setReadHighWatermark(_ bytes: Int)
    /// Sets read/write inactivity timeouts; `nil` clears one.
    func setTimeouts(read: Duration?, write: Duration?)
    /// Appends bytes to the output.
    func write(_ bytes: [UInt8])
    /// Closes now; unsent bytes are dropped. Idempotent.
    func close()
    /// Closes with a reset: the peer learns at once that the exchange was abandoned.
    func reset()
    /// Sends what is queued, then closes gracefully (a lingering close); `flushed` runs once
    /// everything queued was handed over (or the stream ended first).
    func closeAfterFlush(linger: Duration, flushed: (() -> Void)?)
    /// Half-closes once everything queued is sent, but keeps reading and reporting.
    func finishWriting()
    /// Whether a stream that should be quiet has received anything or been closed (may look at
    /// the socket).
    func peekPeer() -> PeerActivity
    /// ``peekPeer()`` without looking at the socket: what has already been seen.
    var seenPeerActivity: PeerActivity { get }
    /// The consumer of what this stream receives has taken `taken` bytes of the current message:
    /// a stream whose receive window follows its consumer (``ReceiveWindow``) lets the peer send
    /// more at once. Others ignore it.
    func widenReceiveWindow(taken: Int)
    /// A new message is about to be received after a consumer that fell behind: a stream whose
    /// receive window follows its consumer starts it small again. Others ignore it.
    func narrowReceiveWindow()
    /// A later lingering close (``closeAfterFlush(linger:flushed:)``) discards at most `bytes`
    /// of what the peer still sends, then closes at once: for a peer ended for flooding, which
    /// would keep it reading (and the loop busy) for the whole linger. Streams that do not
    /// linger ignore it.
    func limitLingeringDiscard(to bytes: Int)
    /// The server name (SNI) a TLS client asked for when this stream is the server side of a
    /// completed handshake; nil otherwise.
    var tlsServerName: String? { get }
    /// The application protocol (ALPN) a completed TLS handshake agreed on; nil otherwise.
    var tlsApplicationProtocol: String? { get }
    /// Calls `body` once, from the loop, with the first byte the peer sends, left unread for
    /// whoever reads next: how an intercepted tunnel tells a TLS ClientHello (`0x16`) from
    /// plaintext HTTP. `nil` when the peer leaves first. `false` (nothing armed) when the stream
    /// cannot peek, is closed or has unread input.
    func peekFirstByte(_ body: @escaping (UInt8?) -> Void) -> Bool
    /// Goes on with this accepted plain stream as the server side of TLS with `context` (HTTPS
    /// interception, after a CONNECT was answered): the stream to read and write from now on,
    /// which reports ``ConnectionDelegate/connectionDidConnect(_:)`` once the handshake
    /// completes. `nil` (and this stream unchanged) when it cannot: bytes unread or unsent, or a
    /// stream that is TLS already.
    func startTLSServer(context: TLSServerContext) -> (any ByteStream)?
}

extension ByteStream {
    /// The kernel sizes this stream's receive window: nothing to do.
    public func widenReceiveWindow(taken: Int) {}

    /// The kernel sizes this stream's receive window: nothing to do.
    public func narrowReceiveWindow() {}

    /// Does not linger: nothing to limit.
    public func limitLingeringDiscard(to bytes: Int) {}

    /// Not TLS: no server name.
    public var tlsServerName: String? { nil }

    /// Not TLS: no application protocol.
    public var tlsApplicationProtocol: String? { nil }

    /// Cannot peek: nothing armed.
    public func peekFirstByte(_ body: @escaping (UInt8?) -> Void) -> Bool { false }

    /// Cannot become a TLS server.
    public func startTLSServer(context: TLSServerContext) -> (any ByteStream)? { nil }

    /// ``closeAfterFlush(linger:flushed:)`` with a 2 s linger.
    public func closeAfterFlush(flushed: (() -> Void)? = nil) {
        closeAfterFlush(linger: .seconds(2), flushed: flushed)
    }

    /// ``closeAfterFlush(linger:flushed:)`` with nothing to run once flushed.
    public func closeAfterFlush(linger: Duration) {
        closeAfterFlush(linger: linger, flushed: nil)
    }
}

/// What a quiet stream's peer has done since it was last read.
public enum PeerActivity: Sendable, Equatable {
    /// Nothing: no bytes waiting, no close.
    case quiet
    /// The peer closed (or reset) the stream, or it is already closed here.
    case closed
    /// Bytes are waiting.
    case data
}
