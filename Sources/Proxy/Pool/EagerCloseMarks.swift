/// Backends seen closing pooled connections right after their responses, remembered for a
/// while and for a bounded number of pool keys.
///
/// Such a backend races every reuse: the close may still be on its way when the next request
/// is written, and a stale-connection peek cannot win that race. Non-retryable requests to a
/// marked key therefore get fresh connections (see ``UpstreamPoolState``).
///
/// Bounded: at most ``capacity`` keys; marking one more evicts the oldest mark (a proxy
/// allowed to reach arbitrary hosts must not grow this map without limit).
struct EagerCloseMarks {
    /// A close sooner than this after the connection's last response marks its key.
    static let window: Duration = .seconds(1)
    /// How long a mark lasts.
    static let memory: Duration = .seconds(300)

    /// The most keys remembered at once.
    let capacity: Int
    /// When each key was last marked.
    private(set) var marks: [String: PoolInstant] = [:]

    /// An empty set of marks holding at most `capacity` keys (at least one).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Records that a connection of `key` that went idle at `idleSince` was closed by its
    /// backend at `now`; marks the key when that was within ``window``.
    mutating func noteClose(_ key: String, idleSince: PoolInstant, now: PoolInstant) {
        guard now - idleSince < Self.window else { return }
        mark(key, now: now)
    }

    /// Marks `key` as of `now`, evicting the oldest mark if the map is full.
    mutating func mark(_ key: String, now: PoolInstant) {
        if marks[key] == nil && marks.count >= capacity {
            // Rare (a new key while full): a linear scan over at most `capacity` entries.
            if let oldest = marks.min(by: { $0.value < $1.value })?.key { marks[oldest] = nil }
        }
        marks[key] = now
    }

    /// Whether `key` is marked as of `now`; forgets an expired mark.
    mutating func contains(_ key: String, now: PoolInstant) -> Bool {
        // Most pools never see an eager close: skip hashing the key on the request path.
        guard !marks.isEmpty, let last = marks[key] else { return false }
        if now - last < Self.memory { return true }
        marks[key] = nil
        return false
    }
}
