import EventLoop
import HTTP1

/// Collects a small message body (Content-Length, chunked, or until close) into an array, up to
/// a limit, through the tree's one body reader (``BodyRelay``). For the admin server's request
/// bodies and the token client's responses: copying is fine there, and the limit bounds memory.
public struct BodyCollector {
    /// What a ``read(from:)`` call achieved.
    public enum Outcome: Equatable, Sendable {
        /// More bytes are needed.
        case needMore
        /// The body is complete (its bytes are drained from the input).
        case complete([UInt8])
        /// The body is larger than the limit.
        case tooLarge
        /// The chunked framing is broken; the message is safe to show.
        case invalid(String)
    }

    private var relay: BodyRelay
    private let staging = OwnedEventBuffer()
    private let limit: Int
    /// Set when a body of known length is larger than the limit.
    public let declaredTooLarge: Bool
    private var finished: Outcome?

    /// A collector for a body framed as `framing`, at most `limit` bytes. A Content-Length above
    /// `limit` is ``declaredTooLarge`` (answer before reading it).
    public init(framing: BodyFraming, limit: Int) {
        self.limit = limit
        if case .contentLength(let length) = framing, length > UInt64(limit) {
            declaredTooLarge = true
            relay = BodyRelay(framing: .none, chunkedOutput: false, forwardTrailers: false)
        } else {
            declaredTooLarge = false
            relay = BodyRelay(framing: framing, chunkedOutput: false, forwardTrailers: false)
        }
    }

    /// Whether the body ends when the peer closes (call ``finishAtClose()`` then).
    public var endsAtClose: Bool { relay.endsAtClose }

    /// Consumes what it can from `input`: the body's bytes, never what follows it.
    public mutating func read(from input: EventBuffer) -> Outcome {
        if let finished { return finished }
        if declaredTooLarge { return finish(.tooLarge) }
        let progress: BodyRelay.Progress
        do {
            progress = try relay.pump(from: input, to: staging.buffer, limit: limit + 1)
        } catch {
            if case .invalid(let message) = error { return finish(.invalid(message)) }
            return finish(.invalid("malformed chunked body"))
        }
        // A chunk announced beyond the limit is refused before its data arrives.
        if staging.buffer.count > limit || UInt64(staging.buffer.count) + relay.announcedChunkBytes > UInt64(limit) {
            return finish(.tooLarge)
        }
        guard progress == .complete else { return .needMore }
        return finish(.complete(staging.buffer.peekBytes(max: staging.buffer.count)))
    }

    /// The peer closed: a body that ends at close is complete now; any other was cut short.
    public mutating func finishAtClose() -> Outcome {
        if let finished { return finished }
        guard relay.endsAtClose, relay.finishAtClose(to: staging.buffer) else { return .needMore }
        return finish(.complete(staging.buffer.peekBytes(max: staging.buffer.count)))
    }

    private mutating func finish(_ outcome: Outcome) -> Outcome {
        finished = outcome
        staging.buffer.drain(staging.buffer.count)
        return outcome
    }
}
