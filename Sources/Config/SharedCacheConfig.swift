/// `sharedCache:` — the Redis (or Valkey) that replicas of the sidecar share tokens through.
///
/// File paths are resolved at load (relative ones against the config file's directory) and were
/// readable then; the secrets themselves (password, username, encryption key) are read when the
/// credentials are built, never held here.
public struct SharedCacheConfig: Sendable, Equatable {
    /// Where Redis listens (`redis://` or `rediss://`) and which database to select.
    public var url: RedisURL
    /// CA bundle and client certificate for `rediss://` (unused for `redis://`).
    public var tls: TLSSettings
    /// A file holding the password for `AUTH` (optional).
    public var passwordFile: String?
    /// A file holding the ACL user name for `AUTH user password` (optional; needs `passwordFile`).
    public var usernameFile: String?
    /// A file holding the 32-byte AES-256-GCM key that seals cached tokens, raw or base64.
    public var encryptionKeyFile: String
    /// Prefix of every key the sidecar writes (default `token-sidecar:`).
    public var keyPrefix: String
    /// The longest any one Redis operation may take before it counts as failed (default 250 ms).
    public var timeout: Duration

    /// The default ``keyPrefix``.
    public static let defaultKeyPrefix = "token-sidecar:"
    /// The default ``timeout``.
    public static let defaultTimeout: Duration = .milliseconds(250)

    /// Creates settings; optional parameters default to the loader's defaults.
    public init(url: RedisURL, tls: TLSSettings = .default, passwordFile: String? = nil, usernameFile: String? = nil,
                encryptionKeyFile: String, keyPrefix: String = SharedCacheConfig.defaultKeyPrefix,
                timeout: Duration = SharedCacheConfig.defaultTimeout) {
        self.url = url
        self.tls = tls
        self.passwordFile = passwordFile
        self.usernameFile = usernameFile
        self.encryptionKeyFile = encryptionKeyFile
        self.keyPrefix = keyPrefix
        self.timeout = timeout
    }
}
