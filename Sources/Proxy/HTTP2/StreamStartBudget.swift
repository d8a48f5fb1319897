/// The arithmetic of ``HTTP2StreamStarts``: how many HTTP/2 streams a worker may start before
/// its budget is refilled, and when a refill is needed. At most ``capacity`` streams start
/// between two refills, and a refill comes in a later loop iteration than the one that asked
/// for it: an iteration's work stays bounded by what at most two budgets start (what was left
/// of one before the refill, the next after it), as it was when every start asked.
///
/// A refill is asked for once an eighth of the budget is spent (or a connection waits for one),
/// not after every start: a worker starting a stream at a time (one app calling, one call at a
/// time) armed a zero-delay timer for each, an extra loop iteration and `epoll_wait` per call;
/// now one per ``refillStep`` starts. A refill runs after the next iteration's reads (libevent
/// runs expired timers after the sockets its poll found ready), so those reads find what the
/// iteration before left, as they did when every start asked: less an eighth at most.
struct StreamStartBudget: Equatable {
    /// Streams started between two refills, at most.
    let capacity: Int
    /// What may still start before the next refill.
    private(set) var left: Int
    /// A refill was asked for and has not come yet.
    private(set) var refillAsked = false

    /// A full budget of `capacity` starts.
    init(capacity: Int) {
        self.capacity = capacity
        left = capacity
    }

    /// Starts spent before a refill is asked for: an eighth of the budget (at least one).
    var refillStep: Int { max(1, capacity / 8) }

    /// Takes up to `wanted` starts: how many are granted, and whether a refill must be asked for
    /// now (``refillStep`` or more are spent, and none is asked for yet).
    mutating func take(_ wanted: Int) -> (granted: Int, askRefill: Bool) {
        let granted = min(max(wanted, 0), left)
        left -= granted
        return (granted, capacity - left >= refillStep && ask())
    }

    /// A connection waits for starts: whether a refill must be asked for now.
    mutating func waiting() -> Bool {
        ask()
    }

    /// The refill asked for came (a later iteration): a full budget.
    mutating func refill() {
        refillAsked = false
        left = capacity
    }

    private mutating func ask() -> Bool {
        guard !refillAsked else { return false }
        refillAsked = true
        return true
    }
}
