/// How long a listener stops accepting after a failed `accept`: 100 ms, doubling up to 1 s, back
/// to 100 ms after a successful accept.
///
/// Descriptor or memory exhaustion does not clear by retrying at once: the pending connection
/// stays in the backlog, the socket stays readable, and an immediate retry fails again — a busy
/// loop. Pausing lets the connections already open finish and release what they hold.
public struct AcceptBackoff: Sendable, Equatable {
    /// The first pause.
    public static let initial: Duration = .milliseconds(100)
    /// The longest pause.
    public static let maximum: Duration = .seconds(1)

    private var nextDelay = AcceptBackoff.initial

    /// A backoff at its first step.
    public init() {}

    /// The pause after one more failure (each consecutive failure doubles it, up to ``maximum``).
    public mutating func failed() -> Duration {
        let delay = nextDelay
        nextDelay = min(nextDelay * 2, AcceptBackoff.maximum)
        return delay
    }

    /// Starts over after a successful accept.
    public mutating func succeeded() {
        nextDelay = AcceptBackoff.initial
    }
}
