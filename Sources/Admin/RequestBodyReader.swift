import EventLoop
import HTTP1

/// Collects a request body (Content-Length or chunked) from a connection's input into an
/// array, up to a limit. Socket-free, so it is unit-tested on plain buffers.
///
/// Copying bodies is fine here: admin and demo requests are small, and the limit bounds memory.
struct RequestBodyReader {
    /// What a ``read(from:)`` call achieved.
    enum Outcome: Equatable {
        /// More bytes are needed.
        case needMore
        /// The body is complete (its bytes are drained from the input).
        case complete([UInt8])
        /// The body is larger than the limit (answer 413 and close).
        case tooLarge
        /// The chunked framing is broken (answer 400 and close); the message is safe to show.
        case invalid(String)
    }

    private enum Mode {
        case fixed(Int)
        case chunked(ChunkedDecoder)
        case done
    }

    /// Largest prefix shown to the chunked decoder: a size line with extensions (4 KiB) or a
    /// trailer section (64 KiB) must fit in it.
    private static let framingWindow = 72 * 1024

    private var mode: Mode
    private var body: [UInt8] = []
    private let limit: Int

    /// A reader for `framing` (`.untilClose` is treated as no body: requests never use it).
    /// A Content-Length above `limit` is reported by the first ``read(from:)``.
    init(framing: BodyFraming, limit: Int) {
        self.limit = limit
        switch framing {
        case .contentLength(let length):
            mode = length > UInt64(limit) ? .fixed(Int.max) : .fixed(Int(length))
        case .chunked:
            mode = .chunked(ChunkedDecoder())
        case .none, .untilClose:
            mode = .fixed(0)
        }
    }

    /// Whether the declared length already exceeds the limit (answer before reading it).
    var declaredTooLarge: Bool {
        if case .fixed(let length) = mode { return length > limit }
        return false
    }

    /// Consumes what it can from `input`.
    mutating func read(from input: EventBuffer) -> Outcome {
        switch mode {
        case .done:
            return .complete(body)
        case .fixed(let length):
            if length > limit { return .tooLarge }
            guard input.count >= length else { return .needMore }
            body = input.withContiguousPrefix(length) { Array($0) }
            input.drain(length)
            mode = .done
            return .complete(body)
        case .chunked(var decoder):
            defer { if case .chunked = mode { mode = .chunked(decoder) } }
            return readChunked(&decoder, from: input)
        }
    }

    private mutating func readChunked(_ decoder: inout ChunkedDecoder, from input: EventBuffer) -> Outcome {
        while true {
            let step: ChunkedDecoder.Step
            do {
                step = try input.withContiguousPrefix(Self.framingWindow) { bytes throws(HTTPParseError) in
                    try decoder.next(bytes)
                }
            } catch {
                if case .invalid(let message) = error { return .invalid(message) }
                return .invalid("malformed chunked body")
            }
            switch step {
            case .needMore:
                return .needMore
            case .chunkHeader(let size, let consumed):
                guard size <= UInt64(limit - body.count) else { return .tooLarge }
                input.drain(consumed)
            case .data(let remaining):
                let available = min(Int(remaining), input.count)
                if available == 0 { return .needMore }
                input.withContiguousPrefix(available) { body.append(contentsOf: $0) }
                input.drain(available)
                decoder.consumeData(available)
            case .chunkEnd(let consumed):
                input.drain(consumed)
            case .end(let consumed, _):
                input.drain(consumed)
                mode = .done
                return .complete(body)
            }
        }
    }
}
