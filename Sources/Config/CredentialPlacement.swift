/// Where and how a route puts its credential's token into each request (`routes[].inject`).
/// A route without `inject` uses the default, `Authorization: Bearer <token>` (or `DPoP` for a
/// DPoP-bound token), which the loader never represents as a placement: that keeps the
/// default path free of any placement test.
public enum CredentialPlacement: Sendable, Equatable {
    /// `inject: {header: NAME, format: "…{token}…"}`: the field `name` with the format's text
    /// around the token (`prefix` + token + `suffix`). Any field the app sent under that name is
    /// removed first.
    case header(name: String, prefix: String, suffix: String)
    /// `inject: {query: NAME}`: the query parameter `name`, percent-encoded, appended to the
    /// target after every parameter of that name the app sent is removed.
    case query(name: String)
    /// `inject: {basic: …}`: `Authorization: Basic` (RFC 7617) with the token as user or password.
    case basic(BasicCredentialForm)
    /// `inject: {sigv4: …}`: the request the app signed with its placeholder keys is signed again
    /// with the real ones (AWS Signature Version 4), within the regions and services allowed.
    case sigv4(SigV4RouteSettings)

    /// The field a header or Basic placement writes, lowercase; nil for a query placement.
    public var fieldName: String? {
        switch self {
        case .header(let name, _, _): return name.lowercased()
        case .basic, .sigv4: return "authorization"
        case .query: return nil
        }
    }

    /// How logs, traces, metrics and `check` name it: `header:x-api-key`, `query:key`,
    /// `basic`. Never a value.
    public var label: String {
        switch self {
        case .header(let name, _, _): return "header:" + name.lowercased()
        case .query(let name): return "query:" + name
        case .basic: return "basic"
        case .sigv4: return "sigv4"
        }
    }

    /// The label of the default placement (`Authorization: Bearer`).
    public static let defaultLabel = "header:authorization"
}

/// `inject: {sigv4: {allowedRegions, allowedServices, signUnsigned}}`.
public struct SigV4RouteSettings: Sendable, Equatable {
    /// The regions a request may be signed for; empty: any.
    public var allowedRegions: [String]
    /// The services a request may be signed for; empty: any.
    public var allowedServices: [String]
    /// Whether a request the app did not sign is signed (region and service from the host);
    /// without it, such a request is refused: any local process would get AWS access otherwise.
    public var signUnsigned: Bool
    /// `maxHashedBody`: the largest body the sidecar holds whole to hash when the app declared no
    /// `x-amz-content-sha256` (every SDK but S3's), at most 16 MiB; a larger one is refused
    /// with 413. Such a body is held in memory (outside the buffer budget) until it is sent.
    public var maxHashedBody: Int
    /// The default ``maxHashedBody``: 1 MiB (an SQS message, a DynamoDB batch of small items).
    public static let defaultMaxHashedBody = 1 << 20
    /// The route's credential's `placeholderAccessKeyId`: a request signed with any other
    /// access key id is refused (filled in from the credential when the config is loaded).
    public var placeholderAccessKeyId: String

    /// Creates the settings.
    public init(allowedRegions: [String] = [], allowedServices: [String] = [], signUnsigned: Bool = false,
                maxHashedBody: Int = SigV4RouteSettings.defaultMaxHashedBody, placeholderAccessKeyId: String = "") {
        self.placeholderAccessKeyId = placeholderAccessKeyId
        self.maxHashedBody = maxHashedBody
        self.allowedRegions = allowedRegions
        self.allowedServices = allowedServices
        self.signUnsigned = signUnsigned
    }
}

/// The user and password of a Basic placement: which of them is the token.
public enum BasicCredentialForm: Sendable, Equatable {
    /// `basic: {username: "{token}", password: PASSWORD}` (Stripe: the key as user, no password).
    case tokenAsUsername(password: String)
    /// `basic: {username: USER, password: "{token}"}` (the key as password of a fixed user).
    case tokenAsPassword(username: String)
    /// `basic: pair`: the token is itself `user:secret` (a file holding both).
    case pair

    /// The `user:password` text of RFC 7617 §2 for `token`.
    public func userPass(token: String) -> String {
        switch self {
        case .tokenAsUsername(let password): return token + ":" + password
        case .tokenAsPassword(let username): return username + ":" + token
        case .pair: return token
        }
    }
}
