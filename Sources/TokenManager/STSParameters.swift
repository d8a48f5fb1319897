/// The token-exchange parameters of one request (RFC 8693 §2.1). Holds the subject and actor
/// tokens: never log it (its ``description`` shows only the types).
public struct STSParameters: Sendable, Equatable, CustomStringConvertible {
    /// The `subject_token`: the token of whoever the new token acts for.
    public var subjectToken: String
    /// The `subject_token_type` URN.
    public var subjectTokenType: String
    /// The `actor_token`: the token of whoever acts (delegation), if any.
    public var actorToken: String?
    /// The `actor_token_type` URN (sent only with an actor token).
    public var actorTokenType: String
    /// The `requested_token_type` URN, if any.
    public var requestedTokenType: String?

    /// Memberwise initializer.
    public init(subjectToken: String, subjectTokenType: String, actorToken: String? = nil,
                actorTokenType: String = "urn:ietf:params:oauth:token-type:jwt", requestedTokenType: String? = nil) {
        self.subjectToken = subjectToken
        self.subjectTokenType = subjectTokenType
        self.actorToken = actorToken
        self.actorTokenType = actorTokenType
        self.requestedTokenType = requestedTokenType
    }

    /// `exchange(subject: <type>[, actor: <type>])` — never a token.
    public var description: String {
        "exchange(subject: \(subjectTokenType)\(actorToken == nil ? "" : ", actor: \(actorTokenType)"))"
    }
}
