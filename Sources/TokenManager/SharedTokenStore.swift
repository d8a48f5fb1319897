/// The operations the shared token cache needs from its store (Redis in production, a fake in
/// tests). Called on the token loop; every completion runs there, later (never inside the
/// call), within the store's operation timeout.
public protocol SharedTokenStore: AnyObject {
    /// The value at `key`, nil when there is none.
    func read(_ key: String, _ completion: @escaping (Result<[UInt8]?, SharedStoreFailure>) -> Void)
    /// Sets `key` to `owner` for `ttl` only if it does not exist; true when it was set.
    func acquireLease(_ key: String, owner: String, ttl: Duration, _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void)
    /// Sets `key` to `value` for `ttl`.
    func write(_ key: String, value: [UInt8], ttl: Duration, _ completion: @escaping (Result<Void, SharedStoreFailure>) -> Void)
    /// Deletes `key` only if it holds exactly `value` (compare-and-delete); true when it did.
    func deleteIfEqual(_ key: String, value: [UInt8], _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void)
    /// Adds `delta` (0 reads) to the counter at `key` — created at 0 with `ttl` when missing —
    /// and answers its new value: a fleet's shared budget (`limits.budget`).
    func add(_ key: String, _ delta: Int, ttl: Duration, _ completion: @escaping (Result<Int, SharedStoreFailure>) -> Void)
    /// Takes `count` tokens (0 reads) from the token bucket at `key` — refilled at `perSecond`
    /// up to `burst` by the store's own clock, created full when missing, kept for `ttl` — and
    /// answers the tokens left, below zero when the fleet took more than there were (a debt
    /// of at most 16 × (perSecond + burst)): a fleet's shared rate
    /// (`limits.rate`).
    func take(_ key: String, _ count: Int, perSecond: Double, burst: Int, ttl: Duration,
              _ completion: @escaping (Result<Double, SharedStoreFailure>) -> Void)
    /// Closes connections and fails what is in flight (on the token loop, before it stops).
    func close()
}

extension SharedTokenStore {
    /// Nothing to close.
    public func close() {}
}

/// A store operation that failed or timed out; the message never holds keys' values.
public struct SharedStoreFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// Creates a failure.
    public init(_ description: String) { self.description = description }
}
