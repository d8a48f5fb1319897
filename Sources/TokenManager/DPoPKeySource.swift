import EventLoop

/// Where a credential's DPoP key comes from (`dpop: true` or `dpop: {keyFile}`) and the
/// ``TokenBinding`` each token request is made with. A generated key lives as long as the
/// process (never written anywhere); a key file is re-read before every token request and
/// whenever ``keyChanged()`` is asked, and a new key gives a new binding (the next token is
/// bound to it; the current one keeps its own key until then).
public final class DPoPKeySource: Sendable {
    /// The nonces of the credential's servers (shared by its successive keys).
    public let nonces = DPoPNonces()
    private let file: ReloadingFile<DPoPKey>?
    private let current: Locked<TokenBinding>

    /// A source that always uses `key` (a generated one).
    public init(key: DPoPKey) {
        file = nil
        current = Locked(TokenBinding(dpopKey: key, nonces: nonces))
    }

    /// A source reading `path` (PEM: EC P-256 → ES256, RSA ≥ 2048 → RS256); throws when the
    /// file cannot be read or holds no usable key, naming the file.
    public init(keyFile path: String) throws(TokenFetchError) {
        let file = ReloadingFile(CredentialFile(key: "dpop.keyFile", path: path)) { bytes throws(CryptoError) in
            try DPoPKey(key: SigningKey(pem: bytes))
        }
        self.file = file
        current = Locked(TokenBinding(dpopKey: try file.current(), nonces: nonces))
    }

    /// The binding for the next token request: the key file's key as it is now (a rotated file
    /// gives a new binding), or the generated key's.
    public func binding() throws(TokenFetchError) -> TokenBinding {
        guard let file else { return current.withLock { $0 } }
        let key = try file.current()
        return current.withLock { binding in
            if binding.dpopKey !== key { binding = TokenBinding(dpopKey: key, nonces: nonces) }
            return binding
        }
    }

    /// Whether the key comes from a file (which may change).
    public var readsFile: Bool { file != nil }

    /// The binding in use now, without reading anything (its key's thumbprint is shown on
    /// status pages).
    public var latest: TokenBinding { current.withLock { $0 } }

    /// Whether the key file now holds another usable key than the one the latest binding has
    /// (the credential then fetches a token for it). A file that cannot be used is not a change.
    public func keyChanged() -> Bool {
        guard let file, let key = try? file.current() else { return false }
        return current.withLock { $0.dpopKey !== key }
    }
}
