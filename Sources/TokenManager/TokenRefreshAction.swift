/// What the driver of a ``TokenRefreshState`` must do after an event, in order.
public enum TokenRefreshAction: Sendable, Equatable {
    /// Publish this snapshot for ``Credential/currentToken()`` (nil: no usable token).
    case publish(AccessToken?)
    /// Remember this token (e.g. in the ``TokenCache``).
    case store(IssuedToken)
    /// Forget the cached token (it was invalidated).
    case evict
    /// Deliver the token to every registered waiter.
    case resumeWaiters(AccessToken)
    /// Answer every registered waiter with nil now (a fetch on demand failed, or is in backoff).
    case failWaiters
    /// Answer every request holding a 401 for a replay: the new token (each replays only if it
    /// differs from the token its backend rejected), or nil after a failed refetch.
    case resumeRejected(AccessToken?)
    /// Arm the one timer for `at`, replacing any earlier one; report ``TokenRefreshState/timerFired(now:)``.
    case schedule(at: ContinuousClock.Instant)
    /// Cancel any armed timer and start a fetch; report its result with
    /// ``TokenRefreshState/fetchSucceeded(_:now:)`` or ``TokenRefreshState/fetchFailed(_:now:)``.
    /// Always the last action of a batch.
    case fetch
}
