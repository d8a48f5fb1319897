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

    /// The request for the next fetch.
    public func next() throws(TokenFetchError) -> TokenEndpointRequest { try make() }

    /// Runs a request builder, turning its setting errors into a fetch error.
    public static func building(_ build: () throws(TokenEndpointError) -> TokenEndpointRequest) throws(TokenFetchError) -> TokenEndpointRequest {
        do {
            return try build()
        } catch {
            throw TokenFetchError(.clientAuthentication("\(error)"))
        }
    }
}
