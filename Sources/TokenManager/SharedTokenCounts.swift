/// What the shared token cache did for one credential (exported as metrics).
public struct SharedTokenCounts: Sendable, Equatable {
    /// Reads that found a token to adopt.
    public var hits = 0
    /// Reads that found nothing usable.
    public var misses = 0
    /// Entries that did not open (wrong key, tampering, another version): counted as misses too.
    public var corrupt = 0
    /// Store operations that failed or timed out.
    public var errors = 0
    /// Leases taken (this replica fetched for the fleet).
    public var leaseWon = 0
    /// Flights that found the lease taken and waited for its holder.
    public var leaseWaited = 0
    /// Leases taken after waiting without the holder delivering (it died, failed or timed out).
    public var leaseExpired = 0
    /// Fetches made without the fleet because the store failed or the wait ran out.
    public var fallbacks = 0

    /// Zero counts.
    public init() {}
}
