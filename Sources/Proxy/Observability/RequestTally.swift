/// Requests answered, by route and status, counted without hashing: a request with the same
/// key as the one before it (the usual stream on a worker) adds to a running count, and only a
/// change of key folds that count into the dictionary.
public struct RequestTally: Sendable, Equatable {
    private var folded: [RequestCounterKey: UInt64]
    private var last: RequestCounterKey?
    private var lastCount: UInt64 = 0

    /// A tally holding `counts`.
    public init(_ counts: [RequestCounterKey: UInt64] = [:]) {
        folded = counts
    }

    /// Counts one request. The key's route is the same String for every request of a route,
    /// so comparing it with the last key is a pointer comparison.
    public mutating func count(_ key: RequestCounterKey) {
        if key == last {
            lastCount += 1
            return
        }
        fold()
        last = key
        lastCount = 1
    }

    /// Every count.
    public var counts: [RequestCounterKey: UInt64] {
        var counts = folded
        if let last, lastCount > 0 { counts[last, default: 0] += lastCount }
        return counts
    }

    /// Adds another tally's counts.
    public mutating func merge(_ other: RequestTally) {
        folded.merge(other.counts, uniquingKeysWith: +)
    }

    /// Equal when they count the same (however much of it is folded).
    public static func == (a: RequestTally, b: RequestTally) -> Bool {
        a.counts == b.counts
    }

    private mutating func fold() {
        if let last, lastCount > 0 { folded[last, default: 0] += lastCount }
        lastCount = 0
    }
}
