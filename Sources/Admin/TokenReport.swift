import JSON
/// One credential's token status for `/tokens`. There is deliberately no field for the token
/// itself: only a fingerprint can ever be shown.
public struct TokenReport: Sendable, Equatable {
    /// The credential's name.
    public var name: String
    /// Its state, e.g. `valid`, `refreshing`, `failing`.
    public var state: String
    /// A short fingerprint of the current token (e.g. the first 8 hex digits of its SHA-256).
    public var fingerprint: String?
    /// When the current token was obtained.
    public var issuedAt: WallClockTime?
    /// When the current token expires.
    public var expiresAt: WallClockTime?
    /// When the next fetch (refresh or retry) is due.
    public var nextRefresh: WallClockTime?
    /// The last failure (safe to show), nil after a success.
    public var lastError: String?
    /// Fetch counts by outcome, e.g. `["started": 3, "succeeded": 2, "http_5xx": 1]`.
    public var fetchCounts: [String: Int]
    /// For a token fetched per request: the route that fetched it.
    public var route: String?
    /// For a token fetched per request: which one (`scope=read`, `subject=sha256:1a2b3c4d`).
    public var variant: String?
    /// How the current token is presented (scheme, key and certificate thumbprints).
    public var binding: TokenBindingReport?

    /// Creates a report.
    public init(name: String, state: String, fingerprint: String? = nil, issuedAt: WallClockTime? = nil,
                expiresAt: WallClockTime? = nil, nextRefresh: WallClockTime? = nil, lastError: String? = nil,
                fetchCounts: [String: Int] = [:]) {
        self.name = name
        self.state = state
        self.fingerprint = fingerprint
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.nextRefresh = nextRefresh
        self.lastError = lastError
        self.fetchCounts = fetchCounts
    }

    /// The JSON object `/tokens` lists (counts sorted by key, so output is stable).
    var json: JSONValue {
        .object([
            ("name", .string(name)),
            ("state", .string(state)),
            ("fingerprint", .string(fingerprint)),
            ("issuedAt", .string(issuedAt?.iso8601)),
            ("expiresAt", .string(expiresAt?.iso8601)),
            ("nextRefresh", .string(nextRefresh?.iso8601)),
            ("lastError", .string(lastError)),
            ("fetchCounts", .object(fetchCounts.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
        ] + (binding?.members ?? []) + (variant.map { [("route", JSONValue.string(route)), ("variant", .string($0))] } ?? []))
    }
}
