import Synchronization

/// The memory all client sessions of the process may hold in response bytes queued toward
/// their clients, beyond a small share each (``floor``), shared by every worker.
///
/// A client that keeps up never has more than a read's worth queued, and is never counted.
/// One that falls behind (a slow reader) holds up to the high watermark, plus the backend's
/// read-ahead: with hundreds of them that is hundreds of MiB. While the budget has room every
/// exchange uses the full 256 KiB windows (throughput); once it is spent, relays and backend
/// reads go in ``floor``-sized steps (like HAProxy's two 16 KiB buffers per stream) until
/// sessions give bytes back. So the buffered bytes of HTTP exchanges stay within about
/// `limit + sessions × 2 × floor`, whatever the clients do. Exceptions: a chunked body is read
/// ahead at least ``chunkedFloor`` (its trailers are read whole), a TLS backend the full 256
/// KiB (libevent's OpenSSL filter cannot resume below a record), and CONNECT tunnels are not
/// counted (they go only where `connect: allow` lists).
///
/// Only a session whose queued output exceeds ``floor`` touches the counter (one relaxed atomic
/// add per change); the fast path only loads it.
final class BufferBudget: Sendable {
    /// What an exchange may always queue toward its client and read ahead from its backend: 16 KiB
    /// less room for libevent's chunk header, so a read is one 16 KiB allocation.
    static let floor = 16 * 1024 - 128
    /// The default ``limit``: 16 MiB (about 64 slow readers at full windows; the rest of a
    /// 64 MiB container's memory is the process itself and `sessions × 2 × floor`).
    static let defaultLimit = 16 << 20

    /// The most bytes counted sessions hold together before windows shrink to ``floor``.
    let limit: Int
    private let used = Atomic<Int>(0)
    /// The most ``inUse`` reached since ``takeReleased()`` was last called.
    private let peak = Atomic<Int>(0)

    init(limit: Int = BufferBudget.defaultLimit) {
        self.limit = limit
    }

    /// Bytes counted now.
    var inUse: Int { used.load(ordering: .relaxed) }

    /// How far a response relay fills the client's output before pausing the backend.
    @inline(__always)
    var window: Int { used.load(ordering: .relaxed) < limit ? WorkerContext.highWatermark : BufferBudget.floor }

    /// How many bytes a backend's response body is read ahead, for a relay that needs
    /// `needed` bytes at once to make progress (``BodyRelay/bytesNeededAtOnce``: a chunked
    /// body's trailers are read whole, so its read-ahead never drops below them).
    @inline(__always)
    func readAhead(needing needed: Int) -> Int {
        if used.load(ordering: .relaxed) < limit { return WorkerContext.readAhead }
        return Self.smallestReadAhead(needing: needed)
    }

    /// The read-ahead of a spent budget: ``floor``, or ``chunkedFloor`` for a relay that needs
    /// more at once.
    @inline(__always)
    static func smallestReadAhead(needing needed: Int) -> Int {
        needed <= floor ? floor : chunkedFloor
    }

    /// The smallest read-ahead of a chunked relay: room for its largest size line or trailer
    /// section (66 KiB), as one 128 KiB allocation.
    static let chunkedFloor = 128 * 1024 - 128

    /// Changes what one session holds by `delta` bytes.
    func adjust(by delta: Int) {
        let now = used.add(delta, ordering: .relaxed).newValue
        if delta > 0 {
            var seen = peak.load(ordering: .relaxed)
            while now > seen {
                let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
                if exchanged { break }
                seen = original
            }
        }
    }

    /// How many bytes were given back since the last call (the peak since then less what is in
    /// use now), and starts counting anew: the trimmer returns memory to the system only after
    /// a lot was freed.
    func takeReleased() -> Int {
        let now = inUse
        let before = peak.exchange(now, ordering: .relaxed)
        return max(0, before - now)
    }
}
