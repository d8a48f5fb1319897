import HTTPMessage
import JSON

/// The GCE metadata server as Google's libraries use it (`GCE_METADATA_HOST`): `GET` only,
/// `Metadata-Flavor: Google` required (but on `/`, which is how `google.auth.default()` detects
/// GCE), every answer carrying `Metadata-Flavor: Google` (relayed requests are refused by the
/// router). Serves
/// the default service account (also under its email): `token` (`?scopes=` among the
/// credential's, else 400), `email`, `scopes`, `aliases`, `identity?audience=` (an ID token,
/// for a credential that mints them for that audience), `project/project-id`, the directory
/// listings and `?recursive=true`; anything else 404.
enum GCEMetadataEndpoint {
    /// Where the metadata tree starts.
    static let root = "/computeMetadata/v1"
    /// The header every answer carries.
    static let flavor = ("Metadata-Flavor", "Google")
    private static let text = ("Content-Type", "application/text")

    /// The decision for `request` to `endpoint`.
    static func decide(_ request: LocalRequest, _ endpoint: ServedEndpoint) -> EndpointDecision {
        guard request.method == "GET" else {
            return .answer(plain(405, "method not allowed: the metadata server answers GET only", extra: [("Allow", "GET")]))
        }
        if request.path == "/" { return .answer(plain(200, "computeMetadata/\n")) }
        guard request.fields.first("Metadata-Flavor") == "Google" else {
            return .answer(plain(403, "Missing Metadata-Flavor:Google header."))
        }
        let recursive = request.query.first("recursive")?.lowercased() == "true"
        var rest = request.path.dropFirst(root.count)
        if rest.first != nil && rest.first != "/" { return .answer(notFound()) }
        rest = rest.drop { $0 == "/" }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let account = ServiceAccount(endpoint)
        switch parts.filter({ !$0.isEmpty }) {
        case []:
            return directory(recursive, ["instance/", "project/"], .object([("instance", account.instance), ("project", project(endpoint))]))
        case ["instance"]:
            return directory(recursive, ["service-accounts/"], account.instance)
        case ["instance", "service-accounts"]:
            return directory(recursive, ["default/", "\(account.email)/"], account.accounts)
        case ["project"]:
            return directory(recursive, ["project-id"], project(endpoint))
        case ["project", "project-id"]:
            return .answer(plain(200, endpoint.config.projectId ?? ""))
        case let path where path.count >= 3 && path[0] == "instance" && path[1] == "service-accounts":
            guard path[2] == "default" || path[2] == account.email else { return .answer(notFound()) }
            switch path.count == 3 ? nil : path[3] {
            case nil: return directory(recursive, ["aliases", "email", "identity", "scopes", "token"], account.json)
            case "aliases"?: return .answer(plain(200, "default\n"))
            case "email"?: return .answer(plain(200, account.email))
            case "scopes"?: return .answer(plain(200, endpoint.gceScopes.map { $0 + "\n" }.joined()))
            case "token"? where path.count == 4: return token(request, endpoint)
            case "identity"? where path.count == 4: return identity(request, endpoint)
            default: return .answer(notFound())
            }
        default:
            return .answer(notFound())
        }
    }

    /// The default service account as `?recursive=true` shows it.
    private struct ServiceAccount {
        let email: String
        let json: JSONValue

        init(_ endpoint: ServedEndpoint) {
            email = endpoint.config.email ?? ""
            json = .object([("aliases", .array([.string("default")])), ("email", .string(email)),
                            ("scopes", .array(endpoint.gceScopes.map { .string($0) }))])
        }

        var accounts: JSONValue { .object([("default", json), (email, json)]) }
        var instance: JSONValue { .object([("serviceAccounts", accounts)]) }
    }

    private static func project(_ endpoint: ServedEndpoint) -> JSONValue {
        .object([("projectId", .string(endpoint.config.projectId ?? ""))])
    }

    /// A directory: its entries one per line, or with `?recursive=true` its tree as JSON.
    private static func directory(_ recursive: Bool, _ entries: [String], _ tree: JSONValue) -> EndpointDecision {
        if recursive { return .answer(.json(tree, headers: [flavor])) }
        return .answer(plain(200, entries.map { $0 + "\n" }.joined()))
    }

    private static func token(_ request: LocalRequest, _ endpoint: ServedEndpoint) -> EndpointDecision {
        if let asked = request.query.first("scopes") {
            let scopes = asked.split(separator: ",").map(String.init)
            // cloud-platform covers every Google API's scope, as on a VM with that scope.
            let granted = endpoint.gceScopes
            guard granted.contains(ServedEndpoint.defaultScopes[0]) || scopes.allSatisfy(granted.contains) else {
                return .answer(plain(400, "token-sidecar: this service account's token carries the scopes \(endpoint.gceScopes.joined(separator: ",")) only"))
            }
        }
        return .grant(endpoint, .gceToken)
    }

    private static func identity(_ request: LocalRequest, _ endpoint: ServedEndpoint) -> EndpointDecision {
        guard let audience = request.query.first("audience"), !audience.isEmpty else {
            return .answer(plain(400, "non-empty audience parameter required"))
        }
        guard endpoint.idTokenAudience == audience else {
            return .answer(plain(400, "token-sidecar: this credential mints no ID token for audience \(audience)"))
        }
        // SDKs decode an ID token to learn when it expires: a placeholder is not a JWT.
        guard endpoint.config.realTokens else {
            return .answer(plain(400, "token-sidecar: ID tokens are handed out only by an endpoint with realTokens: true (SDKs decode them)"))
        }
        return .grant(endpoint, .gceIdentity)
    }

    /// A grant's answer: the token as JSON, or the ID token as text.
    static func answer(_ format: GrantFormat, _ grant: EndpointGrant, now: Double) -> LocalResponse {
        if format == .gceIdentity { return plain(200, grant.token) }
        return .json(.object([("access_token", .string(grant.token)), ("expires_in", .int(grant.expiresIn(now: now))),
                              ("token_type", .string("Bearer"))]), headers: [flavor])
    }

    /// A text answer, as the metadata server gives leaves and errors.
    static func plain(_ status: Int, _ body: String, extra: [(String, String)] = []) -> LocalResponse {
        LocalResponse(status: status, headers: [flavor, text] + extra, body: Array(body.utf8))
    }

    private static func notFound() -> LocalResponse {
        plain(404, "Not Found: token-sidecar's metadata server serves the default service account's token, email, scopes and identity, and the project id")
    }
}
