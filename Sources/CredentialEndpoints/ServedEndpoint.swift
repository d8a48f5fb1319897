import Config

/// One configured endpoint with what its answers need from its credential's configuration.
public struct ServedEndpoint: Sendable, Equatable {
    /// The endpoint as configured.
    public let config: CredentialEndpoint
    /// The client id apps present (mca, oauth2) and Azure reports: the endpoint's, else the
    /// credential's own.
    public let clientId: String?
    /// The tenant apps ask for (mca): the endpoint's, else the mca credential's.
    public let tenantId: String?
    /// The scopes the credential's tokens carry, from its `scope`; nil when it does not say.
    public let scopes: [String]?
    /// The audience of the ID tokens the credential mints (a Google service account with
    /// `targetAudience`); nil when it mints none.
    public let idTokenAudience: String?

    /// What GCE reports for a credential whose scopes the configuration does not say.
    public var gceScopes: [String] { scopes ?? Self.defaultScopes }

    /// What GCE reports when the credential's scopes are not said.
    public static let defaultScopes = ["https://www.googleapis.com/auth/cloud-platform"]

    /// `endpoint` serving `credential`.
    public init(_ endpoint: CredentialEndpoint, credential: CredentialConfig) {
        config = endpoint
        var ownTenant: String?, scope: String?, audience: String?
        switch credential.kind {
        case .mca(let mca): ownTenant = mca.tenantId
        case .oauth2(let oauth): scope = oauth.scope
        case .googleServiceAccount(let google): (scope, audience) = (google.scope, google.targetAudience)
        case .staticToken, .aws: break
        }
        clientId = endpoint.clientId ?? credential.clientId
        tenantId = endpoint.tenantId ?? ownTenant
        let split = (scope ?? "").split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        scopes = split.isEmpty ? nil : split
        idTokenAudience = audience
    }
}
