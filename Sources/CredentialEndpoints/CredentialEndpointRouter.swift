import Config
import HTTPMessage
import JSON

/// What the credential endpoints make of a request: an answer now (a refusal, a metadata
/// value), or a grant of a credential to word as the endpoint does once its token is looked up.
public enum EndpointDecision: Sendable {
    /// Answered without a token.
    case answer(LocalResponse)
    /// The endpoint's credential is granted, worded as `format`.
    case grant(ServedEndpoint, GrantFormat)
}

/// Finds the endpoint a request is for and checks it as the real service would; pure, so each
/// endpoint's answers are tested without sockets (``CredentialEndpointServer`` serves it).
public struct CredentialEndpointRouter: Sendable {
    /// The endpoints configured, with their credentials' facts.
    public let endpoints: [ServedEndpoint]
    /// Reads a secret file (the Azure identity header, the AWS authorization token) at each
    /// request, trimmed; nil when it cannot be read.
    private let readSecret: @Sendable (String) -> String?

    /// The router of `section`, whose endpoints name credentials among `credentials`.
    public init(_ section: CredentialEndpointsConfig, credentials: [CredentialConfig],
                readSecret: @escaping @Sendable (String) -> String? = { try? SecretSource.file($0).read(environment: [:]) }) {
        endpoints = section.endpoints.compactMap { endpoint in
            credentials.first { $0.name == endpoint.credential }.map { ServedEndpoint(endpoint, credential: $0) }
        }
        self.readSecret = readSecret
    }

    /// The endpoint of `kind`, when configured.
    public func endpoint(_ kind: CredentialEndpoint.Kind) -> ServedEndpoint? {
        endpoints.first { $0.config.kind == kind }
    }

    /// The endpoint whose paths hold `path`, nil when none does.
    public func endpoint(forPath path: String) -> ServedEndpoint? {
        endpoints.first { served in
            switch served.config.kind {
            case .azure: return path == AzureIdentityEndpoint.appServicePath || path == AzureIdentityEndpoint.imdsPath
            case .aws: return path == AWSContainerEndpoint.path
            case .oauth2: return path == (served.config.path ?? CredentialEndpoint.defaultOAuth2Path)
            case .mca: return MCATokenEndpoint.tenant(inPath: path) != nil
            case .gce: return path == "/" || path == GCEMetadataEndpoint.root || path.hasPrefix(GCEMetadataEndpoint.root + "/")
            }
        }
    }

    /// The decision for `request`.
    public func decide(_ request: LocalRequest) -> EndpointDecision {
        guard let served = endpoint(forPath: request.path) else {
            return .answer(.json(status: 404, .object([
                ("error", .string("no credential endpoint at \(request.path)")),
                ("endpoints", .array(endpoints.map { .string(Self.describe($0.config)) })),
            ])))
        }
        switch served.config.kind {
        case .azure: return AzureIdentityEndpoint.decide(request, served, identityHeader: served.config.secretFile.flatMap(readSecret))
        case .aws: return AWSContainerEndpoint.decide(request, served, authorizationToken: served.config.secretFile.flatMap(readSecret))
        case .oauth2: return OAuth2TokenEndpoint.decide(request, served)
        case .mca: return MCATokenEndpoint.decide(request, served, tenant: MCATokenEndpoint.tenant(inPath: request.path) ?? "")
        case .gce: return GCEMetadataEndpoint.decide(request, served)
        }
    }

    /// Where an endpoint answers, for a 404's list.
    static func describe(_ endpoint: CredentialEndpoint) -> String {
        switch endpoint.kind {
        case .mca: return "POST /authorization/v1/apps/{tenantId}/token"
        case .oauth2: return "POST \(endpoint.path ?? CredentialEndpoint.defaultOAuth2Path)"
        case .gce: return "GET \(GCEMetadataEndpoint.root)/…"
        case .azure: return "GET \(AzureIdentityEndpoint.appServicePath), GET \(AzureIdentityEndpoint.imdsPath)"
        case .aws: return "GET \(AWSContainerEndpoint.path)"
        }
    }

    /// The secret handed out with an AWS placeholder key id: useless anywhere (the `sigv4`
    /// routes' re-signing drops the app's signature).
    public static let awsPlaceholderSecret = AWSContainerEndpoint.placeholderSecret
    /// The session token handed out with an AWS placeholder key id (the re-signing drops it).
    public static let awsPlaceholderSessionToken = AWSContainerEndpoint.placeholderSessionToken

    /// The answer granting `grant` in `format` at wall-clock second `now`.
    public static func answer(_ format: GrantFormat, _ grant: EndpointGrant, now: Double) -> LocalResponse {
        switch format {
        case .oauth(let scope):
            return ClientCredentialsRequest.answer(token: grant.token, expiresIn: grant.expiresIn(now: now), scope: scope)
        case .gceToken, .gceIdentity:
            return GCEMetadataEndpoint.answer(format, grant, now: now)
        case .azureAppService, .azureIMDS:
            return AzureIdentityEndpoint.answer(format, grant, now: now)
        case .aws:
            return AWSContainerEndpoint.answer(grant, now: now)
        }
    }
}
