import Crypto
import Glibc

/// The TLS server contexts HTTPS interception presents, one per host, minted on demand by an
/// ``InterceptAuthority`` and kept in a bounded least-recently-used cache.
///
/// Shared by every worker loop (state behind ``Locked``). A miss mints outside the lock, so it
/// costs the calling loop one signature and never holds up another loop; two loops missing the
/// same host at once may each mint (the second result replaces nothing, the first one wins).
public final class LeafCache: Sendable {
    /// The authority that signs the leaves.
    public let authority: InterceptAuthority
    /// Most hosts kept; the least recently used one goes first.
    public let capacity: Int
    private let state: Locked<State>

    /// Cached contexts by lowercase host, with when each was last used.
    private struct State {
        var entries: [String: (context: TLSServerContext, lastUse: UInt64, renewAt: time_t)] = [:]
        /// Increases with every use: the entry with the smallest `lastUse` is the least recently used.
        var clock: UInt64 = 0
        var minted = 0
        var hits = 0
    }

    /// A cache of at most `capacity` hosts (at least 1) for `authority`'s leaves.
    public init(authority: InterceptAuthority, capacity: Int = 1024) {
        self.authority = authority
        self.capacity = max(1, capacity)
        state = Locked(State())
    }

    /// How many leaves were minted (cache misses that succeeded).
    public var minted: Int { state.withLock { $0.minted } }
    /// How many lookups found their host cached.
    public var hits: Int { state.withLock { $0.hits } }
    /// How many hosts are cached.
    public var count: Int { state.withLock { $0.entries.count } }

    /// How long a leaf is valid (it never outlives the CA).
    public static let leafValidity: Duration = .seconds(7 * 24 * 3600)

    /// The context for `host` (compared case-insensitively): the cached one, or a new leaf from
    /// ``authority`` (at most one signature), which then evicts the least recently used host
    /// if the cache is full. A leaf past half its life is replaced, so a busy host never
    /// presents an expired certificate.
    public func context(for host: String) throws(CryptoError) -> TLSServerContext {
        let key = host.lowercased()
        let now = time(nil)
        let cached: TLSServerContext? = state.withLock { state in
            guard let entry = state.entries[key], now < entry.renewAt else { return nil }
            state.clock += 1
            state.entries[key] = (entry.context, state.clock, entry.renewAt)
            state.hits += 1
            return entry.context
        }
        if let cached { return cached }
        let context = try TLSServerContext(leaf: authority.mintLeaf(for: key, validity: Self.leafValidity))
        let expires = min(now + time_t(Self.leafValidity.components.seconds), time_t(authority.expiresAt))
        let renewAt = now + (expires - now) / 2
        return state.withLock { state in
            state.minted += 1
            state.clock += 1
            if let raced = state.entries[key], now < raced.renewAt {
                state.entries[key] = (raced.context, state.clock, raced.renewAt)
                return raced.context
            }
            // A linear scan for the eviction victim: it runs only on a miss with the cache full,
            // next to a signature that costs far more than scanning `capacity` entries.
            if state.entries[key] == nil, state.entries.count >= capacity, let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries.removeValue(forKey: oldest.key)
            }
            state.entries[key] = (context, state.clock, renewAt)
            return context
        }
    }
}
