/// Requests answered (by route and status: ``RequestTally``; by route, credential and policy
/// decision), counted without hashing: a request with the same key as the one before it (the
/// usual stream on a worker) adds to a running count, and only a change of key folds that count
/// into the dictionary.
public struct Tally<Key: Hashable & Sendable>: Sendable, Equatable {
    private var folded: [Key: UInt64]
    private var last: Key?
    private var lastCount: UInt64 = 0

    /// A tally holding `counts`.
    public init(_ counts: [Key: UInt64] = [:]) {
        folded = counts
    }

    /// Counts one request. The key's strings (a route's, a credential's name) are the same
    /// String for every request of a route, so comparing it with the last key is a pointer
    /// comparison.
    public mutating func count(_ key: Key) {
        if key == last {
            lastCount += 1
            return
        }
        fold()
        last = key
        lastCount = 1
    }

    /// Every count.
    public var counts: [Key: UInt64] {
        var counts = folded
        if let last, lastCount > 0 { counts[last, default: 0] += lastCount }
        return counts
    }

    /// Adds another tally's counts.
    public mutating func merge(_ other: Tally) {
        folded.merge(other.counts, uniquingKeysWith: +)
    }

    /// Equal when they count the same (however much of it is folded).
    public static func == (a: Tally, b: Tally) -> Bool {
        a.counts == b.counts
    }

    private mutating func fold() {
        if let last, lastCount > 0 { folded[last, default: 0] += lastCount }
        lastCount = 0
    }
}

/// Requests answered, by route and status.
public typealias RequestTally = Tally<RequestCounterKey>
