/// Whether an HTTP/2 upstream connection is still alive, asked when one of its streams is given
/// up before anything of its response came.
///
/// An upstream gone without a FIN or a reset (a deleted pod whose address now drops packets, a
/// NAT mapping that expired) leaves a shared HTTP/2 connection that takes every new stream and
/// answers none, for as long as TCP retransmits (about 15 minutes on Linux): every request over
/// it would time out. An HTTP/1.1 connection is closed by the first such timeout; a shared one
/// must not be for one slow stream. So a stream given up (its exchange timed out, or its app
/// left) with nothing received sends a `PING`, and a connection from which nothing at all comes
/// before the probe's deadline is dead: it is closed, its streams fail (and are sent again
/// where they may be), and the next requests go over a new connection. Anything read counts,
/// not only the answer: a connection that delivers frames is alive. A deadline that finds the
/// connection's own output still waiting (the `PING` may not have left: an upload the upstream
/// reads slowly fills the socket) is waited once more before the verdict.
///
/// How often: grpc-go's server counts a `PING` as a strike when it comes within five minutes of
/// the one before and the server wrote no `HEADERS` or `DATA` between, and ends the connection
/// at the third (`GOAWAY ENHANCE_YOUR_CALM`, "too_many_pings"). So a probe follows the last one
/// only after ``interval`` (more than five minutes), or sooner once response `HEADERS` or `DATA`
/// came since it (they reset that count).
///
/// A plain value; its connection sends the `PING`, runs the deadline and closes.
struct LivenessProbe {
    /// The least time between two probes with no response frames between, in nanoseconds
    /// (5.5 minutes: past grpc-go's five).
    static let interval: UInt64 = 330 * 1_000_000_000

    /// What to do about a stream given up.
    enum Action: Equatable {
        /// Nothing: a probe is under way, or the last one was too recent.
        case none
        /// Send a `PING` and run the deadline.
        case probe
    }

    /// What a deadline found.
    enum Verdict: Equatable {
        /// Something came: alive (or no probe was under way).
        case alive
        /// Nothing came, but the connection's output still waits: run the deadline once more.
        case waitAgain
        /// Nothing came: the connection is dead.
        case dead
    }

    /// Whether a probe waits for its deadline.
    private(set) var probing = false
    /// Whether anything came from the upstream since the probe was sent.
    private var heard = true
    /// Whether response `HEADERS` or `DATA` came since the last probe.
    private var messagesSinceProbe = false
    /// Whether the probe under way had its deadline run again already.
    private var extended = false
    /// When the last probe was sent (nanoseconds on the monotonic clock), if one was.
    private var lastProbe: UInt64?

    /// A stream was given up at `now` before anything of its response came.
    mutating func streamAbandoned(now: UInt64) -> Action {
        guard !probing else { return .none }
        if let lastProbe, now &- lastProbe < Self.interval, !messagesSinceProbe { return .none }
        probing = true
        heard = false
        extended = false
        messagesSinceProbe = false
        lastProbe = now
        return .probe
    }

    /// Bytes came from the upstream (on every read: one store).
    mutating func heardFromPeer() {
        heard = true
    }

    /// A response's `HEADERS` or `DATA` came (one store a frame).
    mutating func messageCame() {
        messagesSinceProbe = true
    }

    /// The probe's deadline passed; `outputWaiting`: the connection's output is not all sent.
    mutating func deadlinePassed(outputWaiting: Bool) -> Verdict {
        guard probing else { return .alive }
        if heard {
            probing = false
            return .alive
        }
        if outputWaiting && !extended {
            extended = true
            return .waitAgain
        }
        probing = false
        return .dead
    }
}
