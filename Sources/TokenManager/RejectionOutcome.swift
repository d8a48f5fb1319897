/// What a 401 for a token leads to (``TokenRefreshState/rejected(_:now:waiting:)``).
public enum RejectionOutcome: Equatable, Sendable {
    /// A different usable token is current: replay the request with it.
    case replay(AccessToken)
    /// A refetch is running (started by this report or an earlier one): wait for its result.
    case awaitRefetch
    /// No different token will come soon (its refetch is delayed, ran already, or the token is
    /// not current): pass the 401 on.
    case passThrough
}
