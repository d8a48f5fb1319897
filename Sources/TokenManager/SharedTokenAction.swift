/// What the driver of a ``SharedTokenState`` must do, in order. Every store operation reports
/// back through the matching event; failures count as the store being unavailable.
public enum SharedTokenAction: Sendable, Equatable {
    /// Read the entry; report ``SharedTokenState/entryRead(_:now:)``.
    case read
    /// Delete the entry if it still holds exactly these sealed bytes (the rejected token);
    /// report ``SharedTokenState/storeFinished(ok:)``.
    case deleteIfEqual([UInt8])
    /// `SET lease owner NX PX ttl`; report ``SharedTokenState/leaseResult(_:now:)``.
    case acquireLease(ttl: Duration)
    /// Delete the lease if this instance still owns it; report ``SharedTokenState/storeFinished(ok:)``.
    case releaseLease
    /// Use this entry as the credential's token (no fetch).
    case adopt(SharedTokenEntry)
    /// Fetch from the token server (as without a shared cache); report
    /// ``SharedTokenState/fetchFinished(_:now:)``.
    case fetch
    /// Seal and store this token until it stops being usable; report ``SharedTokenState/storeFinished(ok:)``.
    case write(IssuedToken)
    /// Arm the poll timer; report ``SharedTokenState/pollFired(now:)``.
    case schedulePoll(at: ContinuousClock.Instant)
    /// The store started (false) or stopped (true) failing: log it once.
    case availabilityChanged(Bool)
}
