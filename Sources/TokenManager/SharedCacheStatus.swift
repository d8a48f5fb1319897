/// The shared cache as one credential sees it, for the status page and metrics.
public struct SharedCacheStatus: Sendable, Equatable {
    /// Whether the store answered the last operation.
    public var available: Bool
    /// Where the flight is (`idle`, `reading`, `leasing`, `waiting`, `fetching`).
    public var phase: String
    /// Counters.
    public var counts: SharedTokenCounts

    /// Creates a status.
    public init(available: Bool, phase: String, counts: SharedTokenCounts) {
        self.available = available
        self.phase = phase
        self.counts = counts
    }
}
