import EventLoop

/// A point in time for the upstream pool: nanoseconds on the monotonic clock the loop's timers
/// run on. The pool reads the time twice per request (taking and giving back a connection):
/// `ContinuousClock.now` cost ~90 instructions a read, and its 128-bit `Instant` arithmetic
/// more; the coarse clock (``Timer/coarseNow()``) is read without the TSC, and its few
/// milliseconds are nothing to idle timeouts of seconds. Comparable and subtractable like an
/// `Instant`.
struct PoolInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds since an arbitrary point (the monotonic clock's origin).
    let nanoseconds: UInt64

    /// The current time.
    static var now: PoolInstant { PoolInstant(nanoseconds: Timer.coarseNow()) }

    static func < (lhs: PoolInstant, rhs: PoolInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// `instant` moved by `duration` (saturating at the clock's ends; tests and cold paths).
    static func + (instant: PoolInstant, duration: Duration) -> PoolInstant {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (delta, overflowAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow || overflowAgain { return PoolInstant(nanoseconds: seconds < 0 ? 0 : .max) }
        if delta >= 0 {
            let (sum, past) = instant.nanoseconds.addingReportingOverflow(UInt64(delta))
            return PoolInstant(nanoseconds: past ? .max : sum)
        }
        let (difference, before) = instant.nanoseconds.subtractingReportingOverflow(delta.magnitude)
        return PoolInstant(nanoseconds: before ? 0 : difference)
    }

    static func += (instant: inout PoolInstant, duration: Duration) { instant = instant + duration }

    /// How long after `rhs` `lhs` is (negative when it is before).
    static func - (lhs: PoolInstant, rhs: PoolInstant) -> Duration {
        lhs >= rhs ? .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds))
            : .nanoseconds(-Int64(clamping: rhs.nanoseconds - lhs.nanoseconds))
    }
}
