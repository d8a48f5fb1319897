import Crypto
import EventLoop

/// The process's connection to the fleet's shared token cache: the store, the sealing key,
/// the key prefix and this instance's lease id. Credentials get a ``binding(material:)`` each.
public final class SharedTokenCache: @unchecked Sendable {
    // @unchecked: the store is used only on the token loop (every user runs there).
    /// The store (Redis).
    public let store: any SharedTokenStore
    /// Seals and opens entries.
    public let sealer: TokenSealer
    /// Prefix of every key written.
    public let keyPrefix: String
    /// This process's lease owner id (random, 128 bits, hex).
    public let instanceId: String
    /// How often a replica waiting for another one's fetch reads again.
    public let pollInterval: Duration

    /// Creates the cache.
    public init(store: any SharedTokenStore, sealer: TokenSealer, keyPrefix: String,
                instanceId: String = Digest.hex(AESGCM.randomBytes(16) ?? []), pollInterval: Duration = .milliseconds(50)) {
        self.store = store
        self.sealer = sealer
        self.keyPrefix = keyPrefix
        self.instanceId = instanceId
        self.pollInterval = pollInterval
    }

    /// The keys of the credential whose token is determined by `material` (token URL, client id,
    /// auth kind, scope, …; never a secret): SHA-256 hex, so no client id or URL appears in a key name.
    public func binding(material: String) -> Binding {
        let hash = Digest.sha256Hex(material)
        return Binding(cache: self, hash: hash, entryKey: "\(keyPrefix)token:\(hash)", leaseKey: "\(keyPrefix)lease:\(hash)")
    }

    /// One credential's place in the shared cache.
    public struct Binding: Sendable {
        /// The cache.
        public let cache: SharedTokenCache
        /// SHA-256 hex of the credential's key material (also the sealing's additional data).
        public let hash: String
        /// Where the sealed token lives.
        public let entryKey: String
        /// The lease key.
        public let leaseKey: String
    }
}
