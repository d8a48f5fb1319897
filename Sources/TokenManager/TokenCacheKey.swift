/// Identifies one cached token: the credential and the variant it was requested for.
public struct TokenCacheKey: Sendable, Hashable, CustomStringConvertible {
    /// The credential's name.
    public var credential: String
    /// The requested scope, if any.
    public var scope: String?
    /// The requested audience, if any.
    public var audience: String?
    /// The requested resource, if any.
    public var resource: String?

    /// Memberwise initializer.
    public init(credential: String, scope: String? = nil, audience: String? = nil, resource: String? = nil) {
        self.credential = credential
        self.scope = scope
        self.audience = audience
        self.resource = resource
    }

    /// The key for `request` fetched for `credential`.
    public init(credential: String, request: TokenEndpointRequest) {
        self.init(credential: credential, scope: request.scope, audience: request.audience, resource: request.resource)
    }

    /// `name[scope=…,audience=…,resource=…]`.
    public var description: String {
        let parts = [("scope", scope), ("audience", audience), ("resource", resource)].compactMap { name, value in
            value.map { "\(name)=\($0)" }
        }
        return parts.isEmpty ? credential : "\(credential)[\(parts.joined(separator: ","))]"
    }
}
