/// What an HTTP/2 stream owes its connection's receive windows: body bytes put into its
/// exchange's input, and how many of them were reported taken. Both sides keep one
/// (``HTTP2StreamSession`` for an app's request bodies, ``HTTP2UpstreamLease`` for an upstream's
/// responses), so windows open only as sessions drain.
struct StreamWindowCredit {
    /// Body bytes put into the input.
    private(set) var delivered = 0
    /// Of those, the ones reported taken.
    private(set) var reported = 0

    /// Whether bytes wait to be reported.
    var owes: Bool { delivered > reported }

    /// `count` body bytes went into the input.
    mutating func deliver(_ count: Int) { delivered += count }

    /// Bytes taken since the last report, when `left` bytes are still in the input (framing
    /// included, roughly: what is left counts as body first).
    mutating func takeConsumed(left: Int) -> Int {
        let taken = max(0, delivered - left)
        let new = taken - reported
        guard new > 0 else { return 0 }
        reported = taken
        return new
    }

    /// Everything not reported yet (the lease leaves its stream: it goes back to the window).
    mutating func takeUnreported() -> Int {
        let left = delivered - reported
        reported = delivered
        return max(0, left)
    }
}
