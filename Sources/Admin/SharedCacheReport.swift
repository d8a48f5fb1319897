import JSON

/// One credential's view of the fleet's shared token cache on the status page.
public struct SharedCacheReport: Sendable, Equatable {
    /// Whether the cache answered the last operation.
    public var available: Bool
    /// Tokens adopted from the fleet (no fetch).
    public var hits: Int
    /// Reads that found nothing usable.
    public var misses: Int
    /// Leases won (fetched for the fleet).
    public var leasesWon: Int
    /// Flights that waited for another replica.
    public var leasesWaited: Int
    /// Fetches made alone because the cache failed or the wait ran out.
    public var fallbacks: Int
    /// Failed or timed-out operations.
    public var errors: Int

    /// Creates a row.
    public init(available: Bool, hits: Int, misses: Int, leasesWon: Int, leasesWaited: Int, fallbacks: Int, errors: Int) {
        self.available = available
        self.hits = hits
        self.misses = misses
        self.leasesWon = leasesWon
        self.leasesWaited = leasesWaited
        self.fallbacks = fallbacks
        self.errors = errors
    }

    /// `sharing` or `unavailable (fetching alone)`.
    public var state: String { available ? "sharing" : "unavailable (fetching alone)" }

    /// The JSON object in the status document.
    public var json: JSONValue {
        .object([
            ("state", .string(state)), ("hits", .int(hits)), ("misses", .int(misses)), ("leasesWon", .int(leasesWon)),
            ("leasesWaited", .int(leasesWaited)), ("fallbacks", .int(fallbacks)), ("errors", .int(errors)),
        ])
    }
}
