import EventLoop
import HTTP1

/// The one head-reading loop of the tree: finds the next complete message head at the front of
/// a stream's input (incrementally, with ``HTTP1/HeadScanner``), hands its bytes to a parser as
/// one contiguous view, and drains them. Used for request heads (the proxy, the admin server)
/// and response heads (the proxy's upstreams, the token client).
///
/// The parser reads offsets into the received bytes; nothing is copied unless the parser copies.
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
}
