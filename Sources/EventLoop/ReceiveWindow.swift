/// The receive buffer of a connection to a loopback backend, sized by how much of the response
/// its consumer (the client) has taken instead of by how fast the proxy reads.
///
/// Why: what a backend queues for a client that has stopped reading is bounded by the window the
/// proxy offers it and by the backend's own send buffer, which the kernel sizes from the
/// segment size and the congestion window it reaches. On loopback (64 KiB segments, RTTs of
/// microseconds) the kernel's autotuning lets a backend push megabytes per connection into
/// socket buffers before the client's stall reaches it (measured: 3–8 MiB per slow reader), and
/// a burst of slow readers then saturates the backend for everybody. A window that starts at
/// ``initial`` and grows only as the client takes bytes keeps a stalled client's share at tens of
/// KiB, while a client that keeps up doubles it every time it has taken twice as much (like slow
/// start) and, once it has taken ``autotuneAfter``, gives it back to the kernel's autotuning
/// (`SO_BUF_LOCK`). It stays so for the connection's next responses unless a client fell behind. On loopback a small window costs little throughput: the round trip
/// is microseconds. (Remote backends keep the kernel's autotuning: there a fixed buffer would
/// cap every download at buffer ÷ RTT, and the network's segment size already keeps the
/// backend's first send buffer small.)
///
/// A plain value: ``SocketConnection`` applies the changes it returns.
public struct ReceiveWindow: Sendable, Equatable {
    /// The size each response starts with: 16 KiB, what HAProxy buffers per direction.
    public static let initial = 16 * 1024
    /// The segment size a loopback connection offers its backend (`TCP_MAXSEG`): Ethernet's.
    /// The kernel sizes a new connection's send buffer at 20 segments; with loopback's 64 KiB
    /// segments that is 2.6 MB per connection before a byte is read, with this one ~87 KB.
    public static let loopbackSegmentSize = 1460
    /// The largest size the kernel grants (`net.core.rmem_max`, read once; 4 MiB at most):
    /// asking for more would cost a system call per step for nothing.
    public static let systemLimit: Int = {
        let text = StartupPages.readAll("/proc/sys/net/core/rmem_max")
        guard let value = Int(String(decoding: text.prefix { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self)), value > 0 else {
            return 212_992  // Linux's default net.core.rmem_max
        }
        return min(value, 4 << 20)
    }()

    /// What the consumer must have taken of a response before the window goes back to the
    /// kernel's autotuning: 1 MiB. A client that reads nothing has at most a few hundred KiB in
    /// the kernel's buffers (its receive buffer and the proxy's not-yet-sent 16 KiB), so one that
    /// took 1 MiB reads; from there a buffer the proxy fixes would only cost throughput (a
    /// single loopback download: ~20% slower at 4 MiB than autotuned).
    public static let autotuneAfter = 1 << 20

    /// What to do to the socket.
    public enum Change: Sendable, Equatable {
        /// Set its receive buffer to this many bytes (`SO_RCVBUF`).
        case size(Int)
        /// Let the kernel autotune it again.
        case autotune
    }

    /// The most the window grows to while the proxy sizes it.
    public let limit: Int
    /// The size set now; nil once the kernel autotunes it.
    public private(set) var size: Int?

    /// A window at ``initial`` that grows up to `limit` (never below ``initial``).
    public init(limit: Int = ReceiveWindow.systemLimit) {
        self.limit = max(limit, ReceiveWindow.initial)
        self.size = ReceiveWindow.initial
    }

    /// The consumer has taken `taken` bytes of the current response: how the window changes, nil
    /// when it stays. It doubles (to the largest power-of-two multiple of ``initial`` not above
    /// `taken`, at most ``limit``) and goes back to the kernel once `taken` reaches
    /// ``autotuneAfter``: a response costs at most log2(1 MiB ÷ 16 KiB) + 1 = 7 system calls.
    public mutating func grow(taken: Int) -> Change? {
        guard let current = size, taken >= 2 * current || taken >= ReceiveWindow.autotuneAfter else { return nil }
        if taken >= ReceiveWindow.autotuneAfter {
            size = nil
            return .autotune
        }
        guard current < limit else { return nil }
        var next = current
        while next < limit && taken >= 2 * next { next *= 2 }
        size = min(next, limit)
        return .size(min(next, limit))
    }

    /// Back to the start (the proxy calls it when a response starts after a client that fell
    /// behind): what to set when the window had grown or was autotuned, nil when it is at
    /// ``initial`` already.
    public mutating func reset() -> Change? {
        guard size != ReceiveWindow.initial else { return nil }
        size = ReceiveWindow.initial
        return .size(ReceiveWindow.initial)
    }
}
