/// Where a managed credential is in its life, for status pages and logs.
public enum TokenPhase: String, Sendable, Equatable {
    /// Not started yet.
    case idle
    /// No usable token; a fetch is in flight.
    case fetching
    /// A usable token; waiting for the refresh time.
    case valid
    /// A usable token; a refresh is in flight.
    case refreshing
    /// A usable token, but the last refresh failed; retrying.
    case degraded
    /// No usable token and the last fetch failed; retrying after a backoff.
    case failing
}
