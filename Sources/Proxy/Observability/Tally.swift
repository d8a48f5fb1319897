/// Requests answered (by route and status: ``RequestTally``; by route, credential and policy
/// decision), counted without hashing: a request with the same key as the one before it (the
/// usual stream on a worker) adds to a running count, and only a change of key folds that count
/// into the dictionary.
public struct Tally<Key: Hashable & Sendable>: Sendable, Equatable {
    private var folded: [Key: UInt64]
    private var last: Key?
    private var lastCount: UInt64 = 0
    /// What ``last`` was counted for by ``count(for:_:key:)``: held, so it cannot be freed and
    /// its address taken by another while compared.
    private var lastSource: (any AnyObject & Sendable)?
    private var lastVariant = 0

    /// A tally holding `counts`.
    public init(_ counts: [Key: UInt64] = [:]) {
        folded = counts
    }

    /// Counts one request. The key's strings (a route's, a credential's name) are the same
    /// String for every request of a route, so comparing it with the last key is a pointer
    /// comparison.
    public mutating func count(_ key: Key) {
        lastSource = nil
        if key == last {
            lastCount += 1
            return
        }
        fold()
        last = key
        lastCount = 1
    }

    /// Counts one request for `source` (an immutable object that decides the key, such as a
    /// route's decision) and `variant` (what else the key says): the same source and variant as
    /// the request before compare as a pointer and an integer, and the key — whose strings would
    /// each be retained and released — is made only when they change.
    public mutating func count(for source: any AnyObject & Sendable, _ variant: Int, key: () -> Key) {
        if let lastSource, lastSource === source && lastVariant == variant {
            lastCount += 1
            return
        }
        count(key())
        lastSource = source
        lastVariant = variant
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
