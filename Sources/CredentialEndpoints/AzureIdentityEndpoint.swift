import HTTPMessage
import JSON

/// Azure managed identity as `azure-identity`'s `ManagedIdentityCredential` calls it, in two
/// forms: App Service / Container Apps (`IDENTITY_ENDPOINT` = `…/msi/token`, `X-IDENTITY-HEADER`
/// = the file's value, `api-version=2019-08-01`) answering `access_token`, `expires_on` (Unix
/// seconds as a string), `resource`, `token_type`, `client_id`; and IMDS
/// (`/metadata/identity/oauth2/token`, `Metadata: true` — like Azure's, no secret: any process
/// of the pod may ask), which also
/// answers `expires_in`, `ext_expires_in` and `not_before` as strings (MSAL requires
/// `expires_in`). `resource` is required (400); a `client_id` (or `object_id`, `mi_res_id`)
/// other than the credential's is an unknown identity (400). The token is the credential's
/// whatever resource is asked: the operator gives the credential the resource's scope.
enum AzureIdentityEndpoint {
    /// The App Service form's path.
    static let appServicePath = "/msi/token"
    /// The IMDS form's path.
    static let imdsPath = "/metadata/identity/oauth2/token"

    /// The decision for `request`; `identityHeader` reads the expected header (App Service form only).
    static func decide(_ request: LocalRequest, _ endpoint: ServedEndpoint, identityHeader: () -> String?) -> EndpointDecision {
        guard request.method == "GET" else {
            return .answer(error(405, "invalid_request", "method not allowed: managed identity answers GET only", extra: [("Allow", "GET")]))
        }
        let imds = request.path == imdsPath
        if imds {
            guard request.fields.first("Metadata")?.lowercased() == "true" else {
                return .answer(error(400, "invalid_request", "Required metadata header not specified"))
            }
        } else {
            guard let expected = identityHeader() else {
                return .answer(error(503, "temporarily_unavailable", "the identity header file cannot be read"))
            }
            guard let sent = request.fields.first("X-IDENTITY-HEADER"),
                  ClientCredentialsRequest.constantTimeEqual(sent, expected) else {
                return .answer(error(401, "invalid_request", "missing or wrong X-IDENTITY-HEADER"))
            }
        }
        guard let version = request.query.first("api-version"), !version.isEmpty else {
            return .answer(error(400, "invalid_request", "Required query variable 'api-version' is missing"))
        }
        if !imds && version != "2019-08-01" {
            return .answer(error(400, "invalid_request", "api-version \(version) is not supported: use 2019-08-01"))
        }
        guard let resource = request.query.first("resource"), !resource.isEmpty else {
            return .answer(error(400, "invalid_request", "Required query variable 'resource' is missing"))
        }
        for key in ["client_id", "object_id", "principal_id", "mi_res_id", "msi_res_id"] {
            guard let asked = request.query.first(key) else { continue }
            guard key == "client_id", asked == endpoint.clientId else {
                return .answer(error(400, "invalid_request", "Identity not found: this endpoint serves one identity\(endpoint.clientId.map { ", client_id \($0)" } ?? "")"))
            }
        }
        return .grant(endpoint, imds ? .azureIMDS(resource: resource, clientId: endpoint.clientId)
                                     : .azureAppService(resource: resource, clientId: endpoint.clientId))
    }

    /// A grant's answer, in the form asked.
    static func answer(_ format: GrantFormat, _ grant: EndpointGrant, now: Double) -> LocalResponse {
        let expiresOn = String(grant.expiresOn(now: now))
        switch format {
        case .azureIMDS(let resource, let clientId):
            let expiresIn = String(grant.expiresIn(now: now))
            var fields: [(String, JSONValue)] = [("access_token", .string(grant.token))]
            if let clientId { fields.append(("client_id", .string(clientId))) }
            fields += [("expires_in", .string(expiresIn)), ("expires_on", .string(expiresOn)), ("ext_expires_in", .string(expiresIn)),
                       ("not_before", .string(String(Int(now.rounded(.down))))), ("resource", .string(resource)),
                       ("token_type", .string("Bearer"))]
            return .json(.object(fields), headers: ClientCredentialsRequest.noStore)
        case .azureAppService(let resource, let clientId):
            var fields: [(String, JSONValue)] = [("access_token", .string(grant.token)), ("expires_on", .string(expiresOn)),
                                                 ("resource", .string(resource)), ("token_type", .string("Bearer"))]
            if let clientId { fields.append(("client_id", .string(clientId))) }
            return .json(.object(fields), headers: ClientCredentialsRequest.noStore)
        default:
            return .error(status: 500, "not an Azure answer")
        }
    }

    /// An error as managed identity words it.
    static func error(_ status: Int, _ code: String, _ description: String, extra: [(String, String)] = []) -> LocalResponse {
        .json(status: status, .object([("error", .string(code)), ("error_description", .string(description))]), headers: extra)
    }
}
