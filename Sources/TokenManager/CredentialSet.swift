/// The credentials of one configuration, by name. Immutable once built, shared by every worker.
public struct CredentialSet: Sendable {
    private let byName: [String: any Credential]
    /// Per route (its host pattern as written), the tokens it fetches per request.
    public let routeVariants: [String: TokenVariants]
    /// The credentials whose own token nobody uses: every route naming them fetches its
    /// tokens per request (a token exchange client, per-request scopes). They never fetch
    /// one and do not hold readiness back.
    public let perRequestOnly: Set<String>
    /// Each credential's placeholder (`placeholder`, `placeholderFile`), by credential name.
    public let placeholders: [String: String]

    /// Collects credentials; names must be unique (the config loader guarantees it).
    public init(_ credentials: [any Credential], routeVariants: [String: TokenVariants] = [:], perRequestOnly: Set<String> = [],
                placeholders: [String: String] = [:]) {
        self.placeholders = placeholders
        var byName: [String: any Credential] = [:]
        for credential in credentials { byName[credential.name] = credential }
        self.byName = byName
        self.routeVariants = routeVariants
        self.perRequestOnly = perRequestOnly
    }

    /// The credential called `name`.
    public subscript(name: String) -> (any Credential)? { byName[name] }

    /// Every route's per-request tokens, sorted by route.
    public var allVariants: [(route: String, variants: TokenVariants)] {
        routeVariants.keys.sorted().map { ($0, routeVariants[$0]!) }
    }

    /// Every credential, sorted by name.
    public var all: [any Credential] { byName.keys.sorted().compactMap { byName[$0] } }
}
