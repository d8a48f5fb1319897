import EventLoop
import HTTP1

/// The one body reader of the tree: moves one message body from a source buffer to a destination buffer, decoding the incoming
/// framing and producing the outgoing one. Body bytes are moved between evbuffers, never copied
/// into Swift memory; only chunk-size lines and trailers are looked at.
public struct BodyRelay {
    /// What a call to ``pump(from:to:limit:)`` achieved.
    public enum Progress: Equatable, Sendable {
        /// The whole body has been moved (and terminated, for chunked output).
        case complete
        /// Everything available was moved; more input is needed.
        case needMore
        /// The destination holds at least `limit` bytes: stop reading the source until it drains.
        case blocked
    }

    @usableFromInline enum Input {
        case length(remaining: UInt64)
        case chunked(ChunkedDecoder)
        case untilClose
        /// Unframed bytes until the source's message ends (``sourceEnded(trailers:)``).
        case untilEnd
        /// The source's message ended, with these trailers to keep (nil: none): the bytes before
        /// the end are still to move.
        case ending(HTTPFields?)
        case done
        /// Done, with the trailers kept for a destination that carries them apart
        /// (``takeTrailers()``). (In the enum, not a field of the relay: two relays per exchange
        /// would otherwise each carry and destroy an optional array.)
        case doneWithTrailers(HTTPFields)
    }

    @usableFromInline var input: Input
    /// Whether the outgoing body is chunk-framed (else bytes are written as they are).
    @usableFromInline let chunkedOutput: Bool
    /// Whether a chunked body's trailer fields are passed on (responses) or dropped (requests:
    /// a trailer must not smuggle a second `Authorization` past the rewriter).
    @usableFromInline let forwardTrailers: Bool
    /// Bytes of body moved so far.
    public internal(set) var bodyBytes: UInt64 = 0

    /// A relay for a body framed as `framing`; `chunkedOutput` re-frames it as chunked.
    /// (Inlinable: two per proxied request, in another module.)
    @inlinable
    public init(framing: BodyFraming, chunkedOutput: Bool, forwardTrailers: Bool) {
        self.forwardTrailers = forwardTrailers
        switch framing {
        case .none: input = .done
        case .contentLength(let length): input = length == 0 ? .done : .length(remaining: length)
        case .chunked: input = .chunked(ChunkedDecoder())
        case .untilClose: input = .untilClose
        }
        self.chunkedOutput = chunkedOutput
    }

    /// A relay for a body that ends where its message does — an HTTP/2 stream's, whose end
    /// (and trailers) the source says apart from its bytes (``sourceEnded(trailers:)``): no
    /// framing to decode, so none is invented on the way. `chunkedOutput` frames it as chunks
    /// for an HTTP/1.1 destination (the trailers in the last chunk when forwarded); otherwise
    /// the trailers are kept for ``takeTrailers()``.
    public init(untilMessageEnd chunkedOutput: Bool, forwardTrailers: Bool) {
        self.forwardTrailers = forwardTrailers
        input = .untilEnd
        self.chunkedOutput = chunkedOutput
    }

    /// Whether the body ends with its source's message and the source has not said so yet.
    public var awaitsMessageEnd: Bool {
        if case .untilEnd = input { return true }
        return false
    }

    /// The source's message ended, with `trailers` (maybe none): once its buffered bytes have
    /// moved, the body is complete.
    public mutating func sourceEnded(trailers: HTTPFields) {
        guard case .untilEnd = input else { return }
        input = .ending(forwardTrailers && !trailers.isEmpty ? trailers : nil)
    }

    /// The trailers of a body that ended, when the output is not chunked (its destination
    /// carries them apart from the body); each returned once. Nil when there were none, or
    /// they are not forwarded.
    public mutating func takeTrailers() -> HTTPFields? {
        guard case .doneWithTrailers(let trailers) = input else { return nil }
        input = .done
        return trailers
    }

    /// Whether the body has been fully relayed.
    @inlinable
    public var isComplete: Bool {
        switch input {
        case .done, .doneWithTrailers: return true
        case .length, .chunked, .untilClose, .untilEnd, .ending: return false
        }
    }

    /// Body bytes still to come when the framing says how many (`Content-Length`); nil for
    /// chunked and close-delimited bodies.
    @inlinable
    public var remainingLength: Int? {
        switch input {
        case .length(let remaining): return Int(clamping: remaining)
        case .done, .doneWithTrailers: return 0
        case .chunked, .untilClose, .untilEnd, .ending: return nil
        }
    }

    /// Chunk data announced by the current chunk's size line and not moved yet (0 outside a
    /// chunk, and for other framings).
    public var announcedChunkBytes: UInt64 {
        if case .chunked(let decoder) = input { return decoder.dataRemaining }
        return 0
    }

    /// Whether the body ends when the source closes (close-delimited responses).
    @inlinable
    public var endsAtClose: Bool {
        if case .untilClose = input { return true }
        return false
    }

    // A chunk-size line or trailer section is looked at through a bounded contiguous prefix.
    private static let framingWindow = 66 * 1024

    /// The most bytes the relay may need buffered at once to make progress: a chunked body's
    /// size line or trailer section is only read whole (up to 66 KiB); other framings need one
    /// byte. A source must be allowed to buffer at least this much ahead, or it can stall.
    public var bytesNeededAtOnce: Int {
        if case .chunked = input { return Self.framingWindow }
        return 1
    }

    /// Moves as much as possible. Throws on malformed chunked framing.
    public mutating func pump(from source: EventBuffer, to destination: EventBuffer, limit: Int) throws(HTTPParseError) -> Progress {
        while true {
            switch input {
            case .done, .doneWithTrailers:
                return .complete
            case .length(let remaining):
                if destination.count >= limit { return .blocked }
                if source.isEmpty { return .needMore }
                let moved = source.move(to: destination, max: Int(clamping: remaining))
                bodyBytes += UInt64(moved)
                let left = remaining - UInt64(moved)
                input = left == 0 ? .done : .length(remaining: left)
            case .untilEnd, .ending:
                // (The source's length read once a pass: each read is a call into libevent.)
                let available = source.count
                if available == 0 {
                    guard case .ending(let trailers) = input else { return .needMore }
                    if chunkedOutput {
                        destination.append(HeadSerializer.lastChunk(trailers: trailers ?? HTTPFields()))
                        input = .done
                    } else {
                        input = trailers.map { .doneWithTrailers($0) } ?? .done
                    }
                    return .complete
                }
                if destination.count >= limit { return .blocked }
                moveAll(available, from: source, to: destination)
                // All of it moved: until the message ends there is nothing more to look at.
                if case .untilEnd = input { return .needMore }
            case .untilClose:
                if destination.count >= limit { return .blocked }
                let available = source.count
                if available == 0 { return .needMore }
                moveAll(available, from: source, to: destination)
                return destination.count >= limit ? .blocked : .needMore
            case .chunked(var decoder):
                if destination.count >= limit { return .blocked }
                // In the middle of chunk data the decoder needs no bytes: ask it first, so body
                // bytes are never made contiguous — only size lines and trailers are looked at.
                var step = try decoder.next(UnsafeRawBufferPointer(start: nil, count: 0))
                if step == .needMore && !source.isEmpty {
                    step = try source.withContiguousPrefix(Self.framingWindow) { bytes throws(HTTPParseError) in
                        try decoder.next(bytes)
                    }
                }
                switch step {
                case .needMore:
                    input = .chunked(decoder)
                    return .needMore
                case .chunkHeader(let size, let consumed):
                    source.drain(consumed)
                    if chunkedOutput { destination.append(HeadSerializer.chunkHeader(Int(size))) }
                case .data(let remaining):
                    if source.isEmpty {
                        input = .chunked(decoder)
                        return .needMore
                    }
                    let moved = source.move(to: destination, max: Int(clamping: remaining))
                    decoder.consumeData(moved)
                    bodyBytes += UInt64(moved)
                case .chunkEnd(let consumed):
                    source.drain(consumed)
                    if chunkedOutput { destination.append(Self.crlf) }
                case .end(let consumed, let trailers):
                    source.drain(consumed)
                    if chunkedOutput {
                        destination.append(HeadSerializer.lastChunk(trailers: forwardTrailers ? trailers : HTTPFields()))
                        input = .done
                    } else {
                        input = forwardTrailers && !trailers.isEmpty ? .doneWithTrailers(trailers) : .done
                    }
                    return .complete
                }
                if case .chunked = input { input = .chunked(decoder) }
            }
        }
    }

    /// Called when the source reached end of stream. Returns whether that is a clean end of the
    /// body (only for close-delimited bodies); writes the last chunk when re-framing.
    public mutating func finishAtClose(to destination: EventBuffer) -> Bool {
        guard endsAtClose else { return isComplete }
        if chunkedOutput { destination.append(Array("0\r\n\r\n".utf8)) }
        input = .done
        return true
    }

    /// Moves everything `source` holds, as one chunk when the output is chunked (a body whose
    /// input has no framing of its own: until the close, or until its message ends).
    private mutating func moveAll(_ available: Int, from source: EventBuffer, to destination: EventBuffer) {
        if chunkedOutput { destination.append(HeadSerializer.chunkHeader(available)) }
        source.moveAll(to: destination, count: available)
        if chunkedOutput { destination.append(Self.crlf) }
        bodyBytes += UInt64(available)
    }

    private static let crlf: [UInt8] = [0x0d, 0x0a]
}
