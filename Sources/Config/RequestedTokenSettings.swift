/// `routes[].scopeHeader`/`allowedScopes` and `audienceHeader`/`allowedAudiences`: the app names,
/// per request, the scopes or audience its token needs, within what the route allows.
public struct RequestedTokenSettings: Sendable, Equatable {
    /// The request field naming the scopes (space-separated), removed before forwarding.
    public var scopeHeader: String?
    /// Every scope a request may ask for; nothing else is ever requested.
    public var allowedScopes: [String]
    /// The request field naming the audience, removed before forwarding.
    public var audienceHeader: String?
    /// Every audience a request may ask for.
    public var allowedAudiences: [String]

    /// Creates settings.
    public init(scopeHeader: String? = nil, allowedScopes: [String] = [], audienceHeader: String? = nil,
                allowedAudiences: [String] = []) {
        self.scopeHeader = scopeHeader
        self.allowedScopes = allowedScopes
        self.audienceHeader = audienceHeader
        self.allowedAudiences = allowedAudiences
    }
}
