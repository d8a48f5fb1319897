import Crypto

/// Makes the token request for each fetch of a credential. A secret request is the same every
/// time; an assertion-based one is signed anew (a fresh `jti`, a current `iat`) or re-read from
/// its file, so a credential asks its source before every fetch.
///
/// ``next()`` runs on the token loop (or the `token` command's loop); an error fails that fetch
/// without sending anything and says which file or setting is at fault.
public struct TokenRequestSource: Sendable {
    /// The `scope` every request asks for (part of the cache key).
    public let scope: String?
    /// The `audience` every request asks for (part of the cache key).
    public let audience: String?
    /// The `resource` every request asks for (part of the cache key).
    public let resource: String?
    /// When the tokens fetched stop being usable at the latest (seconds since 1970): the
    /// expiry of the subject token they are exchanged for.
    public let notAfter: Double?
    /// The credential's DPoP key (`dpop:`): every request then carries a proof, and the
    /// token it gets is bound to the key.
    public var dpop: DPoPKeySource?
    /// The credential's TLS client certificate (`tls_client_auth`): every token is bound to the
    /// pair it was requested with (RFC 8705 §3), which routes with `clientCertificate:
    /// credential` present upstream with it.
    public var certificate: ClientIdentityFiles?
    /// The refresh token of a `grant: refresh_token` credential: each fetch sends it, a rotated
    /// one from the answer replaces it (``ManagedCredential`` writes it before using the
    /// access token), and a shared cache entry carries it to the fleet.
    public var refreshTokens: RefreshTokenFile?
    private let make: @Sendable () throws(TokenFetchError) -> TokenEndpointRequest

    /// A source from a builder; `scope`, `audience` and `resource` must match what it builds.
    public init(scope: String? = nil, audience: String? = nil, resource: String? = nil, notAfter: Double? = nil,
                make: @escaping @Sendable () throws(TokenFetchError) -> TokenEndpointRequest) {
        self.notAfter = notAfter
        self.scope = scope
        self.audience = audience
        self.resource = resource
        self.make = make
    }

    /// Always `request`.
    public static func fixed(_ request: TokenEndpointRequest) -> TokenRequestSource {
        TokenRequestSource(scope: request.scope, audience: request.audience, resource: request.resource) { request }
    }

    /// Whether what the tokens are bound to can change under the running process (a DPoP key
    /// file, a client certificate): the credential then compares every second
    /// (``bindingDiffers(from:)``).
    public var watchesBinding: Bool { (dpop?.readsFile ?? false) || certificate != nil || refreshTokens != nil }

    /// Whether a token requested now would be bound to another key or certificate than
    /// `binding` (the current token's). Files that cannot be used now are not a change.
    public func bindingDiffers(from binding: TokenBinding?) -> Bool {
        if let bound = binding?.dpopKey, let key = dpop?.fileKey(), key !== bound { return true }
        if let bound = binding?.certificate, let identity = try? certificate?.current(), identity != bound { return true }
        return false
    }

    /// The request for the next fetch, bound to the credential's DPoP key (with a fresh proof)
    /// and client certificate when it has them.
    public func next() throws(TokenFetchError) -> TokenEndpointRequest {
        let request = try make()
        let identity = try certificate?.current()
        let key = try dpop?.key()
        guard identity != nil || key != nil else { return request }
        return try request.bound(to: TokenBinding(dpopKey: key, nonces: dpop?.nonces, certificate: identity),
                                 now: SystemTokenClock().wallClockSeconds)
    }

    /// Runs a request builder, turning its setting errors into a fetch error.
    public static func building(_ build: () throws(TokenEndpointError) -> TokenEndpointRequest) throws(TokenFetchError) -> TokenEndpointRequest {
        do {
            return try build()
        } catch {
            throw TokenFetchError(.clientAuthentication("\(error)"))
        }
    }
}
