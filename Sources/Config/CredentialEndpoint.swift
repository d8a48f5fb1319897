/// One endpoint of `credentialEndpoints:`.
public struct CredentialEndpoint: Sendable, Equatable {
    /// Which service the endpoint answers as (its key under `credentialEndpoints`).
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// `POST /authorization/v1/apps/{tenantId}/token`, as IBM Mobile Client Access.
        case mca
        /// An RFC 6749 token endpoint (client credentials) at ``CredentialEndpoint/path``.
        case oauth2
        /// The GCE metadata server (`/computeMetadata/v1/…`).
        case gce
        /// Azure managed identity: the App Service form (`/msi/token`) and IMDS
        /// (`/metadata/identity/oauth2/token`).
        case azure
        /// The AWS container credentials endpoint (`GET /aws/credentials`).
        case aws
    }

    /// The service it answers as.
    public var kind: Kind
    /// The credential whose placeholder (or token) it hands out.
    public var credential: String
    /// Hand out the real token instead of the placeholder (weaker: for apps whose traffic does
    /// not go through the proxy).
    public var realTokens: Bool
    /// mca and oauth2: the tenant (mca) and client id the app must present; nil: the
    /// credential's own.
    public var tenantId: String?
    /// mca and oauth2: the client id the app must present; nil: the credential's own.
    public var clientId: String?
    /// oauth2: the token endpoint's path (default `/oauth/token`).
    public var path: String?
    /// gce: the project id and the service account's email the metadata server reports.
    public var projectId: String?
    /// gce: the service account's email.
    public var email: String?
    /// azure: the file holding the `X-IDENTITY-HEADER` value apps must send; aws: the file
    /// holding the authorization token (`AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`). Read at each
    /// request (a trailing newline ignored), so it may be rotated.
    public var secretFile: String?

    /// An endpoint.
    public init(kind: Kind, credential: String, realTokens: Bool = false, tenantId: String? = nil, clientId: String? = nil,
                path: String? = nil, projectId: String? = nil, email: String? = nil, secretFile: String? = nil) {
        self.kind = kind
        self.credential = credential
        self.realTokens = realTokens
        self.tenantId = tenantId
        self.clientId = clientId
        self.path = path
        self.projectId = projectId
        self.email = email
        self.secretFile = secretFile
    }

    /// The oauth2 endpoint's default path.
    public static let defaultOAuth2Path = "/oauth/token"

    /// The key naming ``secretFile`` for this kind (`identityHeaderFile`, `authorizationTokenFile`).
    public var secretFileKey: String? {
        switch kind {
        case .azure: return "identityHeaderFile"
        case .aws: return "authorizationTokenFile"
        case .mca, .oauth2, .gce: return nil
        }
    }
}
