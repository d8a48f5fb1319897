import EventLoop
import HTTP1

/// The one head-reading loop of the tree: finds the next complete message head at the front of
/// a stream's input (incrementally, with ``HTTP1/HeadScanner``), hands its bytes to a parser as
/// one contiguous view, and drains them. Used for request heads (the proxy, the admin server)
/// and response heads (the proxy's upstreams, the token client).
///
/// The parser reads offsets into the received bytes; nothing is copied unless the parser copies.
/// A parser that can find the end of its head itself (``read(from:prefix:)``) usually saves the
/// scan: a head tends to arrive whole, in one read.
public struct HeadReader: Sendable {
    @usableFromInline var scanner: HeadScanner
    /// How much of the input the scanner is shown: enough to see `limit` bytes and fail then.
    @usableFromInline let window: Int

    /// A reader that fails with ``HTTP1/HTTPParseError/headTooLarge`` once `limit` bytes arrived
    /// without the end of a head.
    public init(limit: Int) {
        scanner = HeadScanner(limit: limit)
        window = limit + 4
    }

    /// Forgets a partly scanned head (its bytes were discarded with the stream's input).
    public mutating func reset() {
        scanner.reset()
    }

    /// The next head, parsed by `parse` over exactly its bytes (then drained from `input`), or
    /// `nil` while it is incomplete (nothing is drained; the next call looks only at new bytes).
    /// Throws what scanning or `parse` throws; the input is then left as it was, and the reader
    /// starts afresh (a stream that goes on after a refused head — a keep-alive client after a
    /// 502 — must not have its next head scanned from the middle of the old one).
    @inlinable
    public mutating func read<Head>(from input: EventBuffer,
                                    _ parse: (UnsafeRawBufferPointer) throws(HTTPParseError) -> Head) throws(HTTPParseError) -> Head? {
        do {
            let found = try input.withContiguousPrefix(window) { (bytes) throws(HTTPParseError) -> Int? in
                try scanner.scan(bytes)
            }
            guard let length = found else { return nil }
            let head = try input.withContiguousPrefix(length, parse)
            input.drain(length)
            scanner.reset()
            return head
        } catch {
            scanner.reset()
            throw error
        }
    }

    /// ``read(from:_:)`` for a parser of a head at the start of bytes that may go on past it,
    /// returning the head and its length (``HTTP1/RequestHeadParser/parsePrefix(_:maxFields:reusing:)``).
    ///
    /// When nothing of this head was scanned yet, `parse` first gets the whole input: a head
    /// that arrived whole is parsed once, without a scan. Only if that fails — the head is
    /// incomplete, or invalid, or begins with empty lines (which the scanner counts) — does the
    /// reader fall back to scanning, and `parse` then gets exactly the head the scanner measured:
    /// what is accepted or refused, and with which error, is the same either way.
    @inlinable
    public mutating func read<Head>(
        from input: EventBuffer, prefix parse: (UnsafeRawBufferPointer) throws(HTTPParseError) -> (head: Head, length: Int)
    ) throws(HTTPParseError) -> Head? {
        if scanner.isFresh {
            let limit = window - 4
            let whole = input.withContiguousPrefix(window) { bytes -> (head: Head, length: Int)? in
                guard let first = bytes.first, first != 0x0D, first != 0x0A,  // CR, LF
                      let parsed = try? parse(bytes), parsed.length <= limit else { return nil }
                return parsed
            }
            if let whole {
                input.drain(whole.length)
                return whole.head
            }
        }
        return try read(from: input) { (bytes) throws(HTTPParseError) -> Head in
            let parsed = try parse(bytes)
            // The parser stops at the first empty line, as the scanner does: they agree.
            guard parsed.length == bytes.count else { throw .invalid("bytes after end of head") }
            return parsed.head
        }
    }
}
