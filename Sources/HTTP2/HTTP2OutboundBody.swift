import HTTP1

/// What a stream still has to send after its head: queued body bytes, whether the body is
/// complete, and the trailers that end it. nghttp2 pulls from it as the peer's windows allow.
/// A class: the codec finds it once per operation and changes it in place (a struct in the
/// codec's table was looked up again for every read and write of it).
final class HTTP2OutboundBody {
    /// Queued bytes; `start` is the first one not yet taken.
    private var bytes: [UInt8] = []
    private var start = 0
    /// The sender said the body is complete.
    private(set) var ended = false
    /// Trailers that follow the body.
    private(set) var trailers: HTTPFields?

    /// Bytes queued and not yet taken.
    var count: Int { bytes.count - start }

    /// Queues `more`.
    func append(_ more: UnsafeRawBufferPointer) {
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 64 * 1024 && start * 2 >= bytes.count {
            // Drop what was taken once it is most of the array: appends stay amortized O(1).
            bytes.removeFirst(start)
            start = 0
        }
        bytes.append(contentsOf: more)
    }

    /// Marks the body complete, with `trailers` to send after it.
    func end(trailers: HTTPFields?) {
        ended = true
        self.trailers = trailers
    }

    /// Empties the queue for another stream. An array larger than ``keptCapacity`` is given
    /// back to the allocator: the spare queues of an idle connection hold little.
    func reset() {
        if bytes.capacity <= Self.keptCapacity {
            bytes.removeAll(keepingCapacity: true)
        } else {
            bytes = []
        }
        start = 0
        ended = false
        trailers = nil
    }

    /// The largest array a queue keeps for another stream (a small response's body fits).
    static let keptCapacity = 1024

    /// Copies up to `capacity` queued bytes to `destination`; returns how many.
    func take(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(destination.count, count)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            destination.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: n)
        }
        start += n
        return n
    }
}
