/// `routes[].exchange`: how a route with `clientAuthorization: exchange` trades the app's own
/// bearer token (the subject) for a token for the upstream (OAuth 2.0 Token Exchange, RFC 8693).
/// Named for the RFC's security token service (STS) that makes the trade: in the code,
/// "exchange" is the proxy's request/response machine only.
public struct STSSettings: Sendable, Equatable {
    /// The `subject_token_type` sent with the app's token.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    /// The default `actor_token_type`: a Kubernetes projected service-account token is a JWT.
    public static let jwtTokenType = "urn:ietf:params:oauth:token-type:jwt"

    /// The `audience` parameter, if any.
    public var audience: String?
    /// The `scope` parameter, if any.
    public var scope: String?
    /// The `resource` parameter (an absolute URI), if any.
    public var resource: String?
    /// The `requested_token_type` parameter, if any.
    public var requestedTokenType: String?
    /// The `subject_token_type` sent with the app's token (default: access token).
    public var subjectTokenType: String
    /// A file whose token is sent as `actor_token` (delegation), re-read before every exchange.
    public var actorTokenFile: String?
    /// The `actor_token_type` (default: JWT).
    public var actorTokenType: String

    /// Creates settings; every parameter has the documented default.
    public init(audience: String? = nil, scope: String? = nil, resource: String? = nil, requestedTokenType: String? = nil,
                subjectTokenType: String = STSSettings.accessTokenType, actorTokenFile: String? = nil,
                actorTokenType: String = STSSettings.jwtTokenType) {
        self.audience = audience
        self.scope = scope
        self.resource = resource
        self.requestedTokenType = requestedTokenType
        self.subjectTokenType = subjectTokenType
        self.actorTokenFile = actorTokenFile
        self.actorTokenType = actorTokenType
    }
}
