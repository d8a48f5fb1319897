import EventLoop

/// What a sender-constrained token is bound to (RFC 9449 DPoP, RFC 8705 §3 certificate-bound):
/// the key its DPoP proofs are signed with. Fixed when the token is requested and carried by
/// the token (``AccessToken/binding``), so a token keeps being presented with its own key
/// after the key file rotated, until its replacement (bound to the new key) is current.
///
/// Immutable and shared by every worker; compared by identity.
public final class TokenBinding: Sendable, Equatable {
    /// The DPoP key every request with the token proves possession of.
    public let dpopKey: DPoPKey
    /// The nonces the credential's servers handed out, shared by its successive keys.
    public let nonces: DPoPNonces

    /// A binding to `dpopKey`, with the credential's nonce store.
    public init(dpopKey: DPoPKey, nonces: DPoPNonces) {
        self.dpopKey = dpopKey
        self.nonces = nonces
    }

    /// The `DPoP` proof for one request to `origin` (`https://host[:port]`) for `path` (its
    /// query is not part of `htu`), presenting `accessToken` (`ath`) unless it is a token
    /// request, with the nonce `origin` gave last.
    public func proof(method: String, origin: String, path: String, accessToken: String?,
                      now: Double) throws(CryptoError) -> String {
        let end = path.utf8.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) ?? path.utf8.endIndex
        return try dpopKey.proof(method: method, uri: origin + path[..<end], accessToken: accessToken,
                                 nonce: nonces.nonce(for: origin), now: now)
    }

    /// Identity: the same binding object.
    public static func == (lhs: TokenBinding, rhs: TokenBinding) -> Bool { lhs === rhs }
}
