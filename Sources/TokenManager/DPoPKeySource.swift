import Crypto
import EventLoop

/// Where a credential's DPoP key comes from (`dpop: true` or `dpop: {keyFile}`). A generated
/// key lives as long as the process (never written anywhere); a key file is re-read before
/// every token request and whenever ``keyChanged()`` is asked, and a new key binds the next
/// token (the current one keeps its own key until then).
public final class DPoPKeySource: Sendable {
    /// The nonces of the credential's servers (shared by its successive keys).
    public let nonces = DPoPNonces()
    private let file: ReloadingFile<DPoPKey>?
    private let current: Locked<DPoPKey>

    /// A source that always uses `key` (a generated one).
    public init(key: DPoPKey) {
        file = nil
        current = Locked(key)
    }

    /// A source reading `path` (PEM: EC P-256 → ES256, RSA ≥ 2048 → RS256); throws when the
    /// file cannot be read or holds no usable key, naming the file.
    public init(keyFile path: String) throws(TokenFetchError) {
        let file = ReloadingFile(CredentialFile(key: "dpop.keyFile", path: path)) { bytes throws(CryptoError) in
            try DPoPKey(key: SigningKey(pem: bytes))
        }
        self.file = file
        current = Locked(try file.current())
    }

    /// Whether the key comes from a file (which may change).
    public var readsFile: Bool { file != nil }

    /// The key for the next token request: the key file's as it is now, or the generated one.
    public func key() throws(TokenFetchError) -> DPoPKey {
        guard let file else { return current.withLock { $0 } }
        let key = try file.current()
        current.withLock { $0 = key }
        return key
    }

    /// The key used last, without reading anything.
    public var latest: DPoPKey { current.withLock { $0 } }

    /// The key file's usable key now (nil without a file, or when it is unusable: not a change).
    public func fileKey() -> DPoPKey? {
        try? file?.current()
    }
}
