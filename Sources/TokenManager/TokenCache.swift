/// A bounded least-recently-used cache of issued tokens (the SDK's `cacheSize`, default 100),
/// shared by the managed credentials of one token loop.
///
/// Not thread-safe: use it only on the token loop's thread.
public final class TokenCache {
    /// The most entries kept.
    public let capacity: Int
    private var entries: [TokenCacheKey: IssuedToken] = [:]
    /// Keys from least to most recently used.
    private var order: [TokenCacheKey] = []

    /// Creates an empty cache holding at most `capacity` (≥ 1) tokens.
    public init(capacity: Int = 100) {
        self.capacity = max(1, capacity)
    }

    /// Number of cached tokens.
    public var count: Int { entries.count }

    /// Keys from least to most recently used (the next eviction first).
    public var keysByRecency: [TokenCacheKey] { order }

    /// The token stored for `key`, marking it most recently used.
    public func token(for key: TokenCacheKey) -> IssuedToken? {
        guard let entry = entries[key] else { return nil }
        touch(key)
        return entry
    }

    /// Stores `token` for `key` as most recently used, evicting the least recently used entry
    /// when full.
    public func store(_ token: IssuedToken, for key: TokenCacheKey) {
        if entries.updateValue(token, forKey: key) != nil {
            touch(key)
            return
        }
        order.append(key)
        if order.count > capacity {
            entries[order.removeFirst()] = nil
        }
    }

    /// Forgets the token for `key`.
    public func remove(_ key: TokenCacheKey) {
        guard entries.removeValue(forKey: key) != nil else { return }
        order.removeAll { $0 == key }
    }

    private func touch(_ key: TokenCacheKey) {
        if let index = order.firstIndex(of: key) { order.remove(at: index) }
        order.append(key)
    }
}
