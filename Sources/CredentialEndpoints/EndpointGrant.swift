/// What an endpoint hands out for a credential: its placeholder (or, with `realTokens`, its
/// token) and when that stops being good.
public struct EndpointGrant: Sendable, Equatable {
    /// An AWS key set: the placeholder key id with placeholder secret and session token, or the
    /// real keys.
    public struct AWSKeys: Sendable, Equatable {
        /// The access key id.
        public var accessKeyId: String
        /// The secret access key.
        public var secretAccessKey: String
        /// The session token, for temporary credentials.
        public var sessionToken: String?

        /// A key set.
        public init(accessKeyId: String, secretAccessKey: String, sessionToken: String?) {
            self.accessKeyId = accessKeyId
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    /// The placeholder or the token (an AWS grant's is unused).
    public var token: String
    /// When the real token stops being usable (wall-clock seconds since 1970); nil: it does not
    /// expire (a static credential).
    public var expiresAt: Double?
    /// For the aws endpoint.
    public var aws: AWSKeys?

    /// A grant.
    public init(token: String, expiresAt: Double?, aws: AWSKeys? = nil) {
        self.token = token
        self.expiresAt = expiresAt
        self.aws = aws
    }

    /// How long a token that does not expire is said to last: SDKs ask again within the hour.
    public static let nonExpiringLifetime = 3600

    /// Whole seconds from `now` until it expires (at least 1), or ``nonExpiringLifetime``.
    public func expiresIn(now: Double) -> Int {
        guard let expiresAt else { return Self.nonExpiringLifetime }
        return max(1, Int((expiresAt - now).rounded(.down)))
    }

    /// The wall-clock second it is said to expire at.
    public func expiresOn(now: Double) -> Int {
        Int(now.rounded(.down)) + expiresIn(now: now)
    }
}
