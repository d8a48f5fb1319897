/// Whether an HTTP/2 upstream connection is still alive, asked when one of its streams is given
/// up before its response came.
///
/// An upstream gone without a FIN or a reset (a deleted pod whose address now drops packets, a
/// NAT mapping that expired) leaves a shared HTTP/2 connection that takes every new stream and
/// answers none, for as long as TCP retransmits (about 15 minutes on Linux): every request over
/// it would time out. An HTTP/1.1 connection is closed by the first such timeout; a shared one
/// must not be for one slow stream. So a stream given up (its exchange timed out, or its app
/// left) sends a `PING`, and a connection from which nothing at all comes before the probe's
/// deadline is dead: it is closed, its streams fail (and are sent again where they may be), and
/// the next requests go over a new connection. Anything read counts, not only the answer: a
/// connection that delivers frames is alive.
///
/// At most one probe in ``interval``: grpc-go's server counts a `PING` that comes within five
/// minutes of the one before, with none of its own frames between, as a strike, and ends the
/// connection at the third (`GOAWAY ENHANCE_YOUR_CALM`, "too_many_pings").
///
/// A plain value; its connection sends the `PING`, runs the deadline and closes.
struct LivenessProbe {
    /// The least time between two probes, in nanoseconds (150 s: two in grpc-go's five minutes).
    static let interval: UInt64 = 150 * 1_000_000_000

    /// What to do about a stream given up.
    enum Action: Equatable {
        /// Nothing: a probe is under way, or the last one was too recent.
        case none
        /// Send a `PING` and run the deadline.
        case probe
    }

    /// Whether a probe waits for its deadline.
    private(set) var probing = false
    /// Whether anything came from the upstream since the probe was sent.
    private var heard = true
    /// When the last probe was sent (nanoseconds on the monotonic clock), if one was.
    private var lastProbe: UInt64?

    /// A stream was given up before its response at `now`.
    mutating func streamAbandoned(now: UInt64) -> Action {
        guard !probing else { return .none }
        if let lastProbe, now &- lastProbe < Self.interval { return .none }
        probing = true
        heard = false
        lastProbe = now
        return .probe
    }

    /// Bytes came from the upstream (on every read: one store).
    mutating func heardFromPeer() {
        heard = true
    }

    /// The probe's deadline passed: whether the connection is dead (nothing came since the probe).
    mutating func deadlinePassed() -> Bool {
        guard probing else { return false }
        probing = false
        return !heard
    }
}
