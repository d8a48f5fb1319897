/// Why a credential needs a token from the fleet: what decides whether the shared entry will do.
public enum SharedTokenNeed: Sendable, Equatable {
    /// No usable token (first fetch, or the last one expired): any usable entry will do.
    case start
    /// Refresh ahead of expiry: an entry will do only if it is not due for refresh itself.
    case refresh
    /// A backend rejected this token value: any usable entry with another value will do, and an
    /// entry holding this one is deleted (the fleet stops adopting it).
    case rejected(String)
}
