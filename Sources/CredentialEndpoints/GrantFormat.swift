/// How an endpoint words a grant, decided from the request before the token is looked up.
public enum GrantFormat: Sendable, Equatable {
    /// mca and oauth2: `access_token`, `token_type`, `expires_in` (and `scope` when asked).
    case oauth(scope: String?)
    /// GCE `…/token`: `access_token`, `expires_in`, `token_type`.
    case gceToken
    /// GCE `…/identity`: the ID token as text.
    case gceIdentity
    /// Azure App Service / Container Apps (`api-version=2019-08-01`).
    case azureAppService(resource: String, clientId: String?)
    /// Azure IMDS.
    case azureIMDS(resource: String, clientId: String?)
    /// AWS container credentials.
    case aws
}
