import Crypto
import EventLoop

/// What a sender-constrained token is bound to: the DPoP key its proofs are signed with (RFC
/// 9449) and/or the TLS client certificate it was requested with (RFC 8705 §3). Fixed when the
/// token is requested and carried by the token (``AccessToken/binding``), so a token keeps
/// being presented with its own key and certificate after the files rotated, until its
/// replacement (bound to the new ones) is current.
///
/// Immutable and shared by every worker; compared by identity.
public final class TokenBinding: Sendable, Equatable {
    /// The DPoP key every request with the token proves possession of (nil: not DPoP-bound).
    public let dpopKey: DPoPKey?
    /// The nonces the credential's servers handed out (with ``dpopKey``).
    public let nonces: DPoPNonces?
    /// The client certificate and key the token was requested with over mutual TLS.
    public let certificate: ClientIdentity?
    /// `ath` of the token last presented with this binding (one token per binding, so computed once).
    private let lastAth = Locked<(token: String, ath: String)?>(nil)

    /// A binding to a DPoP key (with the credential's nonce store) and/or a certificate.
    public init(dpopKey: DPoPKey? = nil, nonces: DPoPNonces? = nil, certificate: ClientIdentity? = nil) {
        self.dpopKey = dpopKey
        self.nonces = dpopKey == nil ? nil : (nonces ?? DPoPNonces())
        self.certificate = certificate
    }

    /// The same binding without the DPoP key (the server issued a bearer token), nil when
    /// nothing is left.
    public var withoutDPoP: TokenBinding? {
        guard dpopKey != nil else { return self }
        return certificate.map { TokenBinding(certificate: $0) }
    }

    /// The `DPoP` proof for one request to `origin` (`https://host[:port]`) for `path` (its
    /// query is not part of `htu`), presenting `accessToken` (`ath`) unless it is a token
    /// request, with the nonce `origin` gave last. Nil without a DPoP key.
    public func proof(method: String, origin: String, path: String, accessToken: String?,
                      now: Double) throws(CryptoError) -> String? {
        try proof(method: method, origin: origin, path: path, accessToken: accessToken,
                  nonce: nonces?.nonce(for: origin), now: now)
    }

    /// A proof carrying exactly `nonce` (the caller read it, to know later which one it sent).
    func proof(method: String, origin: String, path: String, accessToken: String?, nonce: String?,
               now: Double) throws(CryptoError) -> String? {
        guard let dpopKey else { return nil }
        let end = path.utf8.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) ?? path.utf8.endIndex
        return try dpopKey.proof(method: method, uri: origin + path[..<end], ath: accessToken.map(ath),
                                 nonce: nonce, now: now)
    }

    private func ath(_ token: String) -> String {
        if let known = lastAth.withLock({ $0 }), known.token == token { return known.ath }
        let ath = DPoPKey.ath(token)
        lastAth.withLock { $0 = (token, ath) }
        return ath
    }

    /// Identity: the same binding object.
    public static func == (lhs: TokenBinding, rhs: TokenBinding) -> Bool { lhs === rhs }
}

extension ClientIdentity {
    /// The certificate's `x5t#S256` (RFC 8705 §3.1): base64url SHA-256 of its DER. Safe to show.
    public var thumbprint: String { Base64.encodeURL(leafSHA256) }
}
