import Config
import HTTPMessage
import JSON

/// Finds the endpoint a request is for and checks it as the real service would; pure, so each
/// endpoint's answers are tested without sockets (``CredentialEndpointServer`` serves it).
/// Before any endpoint looks at it, a request relayed by a proxy (`Via`, `Forwarded`,
/// `X-Forwarded-For`: this one adds `Via`) or naming a host that is not this pod's (a DNS
/// rebinding page in a developer's browser) is refused with 403.
public struct CredentialEndpointRouter: Sendable {
    /// The endpoints configured, with their credentials' facts.
    public let endpoints: [ServedEndpoint]
    /// Whether any `Host` is accepted (`allowNonLoopback: true`).
    private let anyHost: Bool
    /// Reads a secret file (the Azure identity header, the AWS authorization token) when a
    /// request needs it; nil when it cannot be read.
    private let readSecret: @Sendable (String) -> String?

    /// The router of `section`, whose endpoints name credentials among `credentials`.
    public init(_ section: CredentialEndpointsConfig, credentials: [CredentialConfig],
                readSecret: @escaping @Sendable (String) -> String? = SecretFile.read) {
        endpoints = section.endpoints.compactMap { endpoint in
            credentials.first { $0.name == endpoint.credential }.map { ServedEndpoint(endpoint, credential: $0) }
        }
        anyHost = section.allowNonLoopback
        self.readSecret = readSecret
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

    /// The decision for `request`, for the endpoint `served` whose paths hold it (nil: none).
    public func decide(_ request: LocalRequest, for served: ServedEndpoint?) -> EndpointDecision {
        guard let served else {
            let flavor = endpoints.contains { $0.config.kind == .gce } ? [GCEMetadataEndpoint.flavor] : []
            return .answer(.json(status: 404, .object([
                ("error", .string("no credential endpoint at \(request.path)")),
                ("endpoints", .array(endpoints.map { .string(Self.describe($0.config)) })),
            ]), headers: flavor))
        }
        for name in ["Via", "Forwarded", "X-Forwarded-For"] where request.fields.first(name) != nil {
            return .answer(Self.refusal(served.config.kind, status: 403, code: "invalid_request",
                                        "Request had \(name) header: the credential endpoints answer this pod's own processes only"))
        }
        if !anyHost, let host = request.fields.first("Host"), !Self.isLocal(host: host) {
            return .answer(Self.refusal(served.config.kind, status: 403, code: "invalid_request",
                                        "Host \(host) is not this pod's: the credential endpoints answer requests to a loopback or metadata address only"))
        }
        switch served.config.kind {
        case .azure: return AzureIdentityEndpoint.decide(request, served) { served.config.secretFile.flatMap(readSecret) }
        case .aws: return AWSContainerEndpoint.decide(request, served, authorizationToken: served.config.secretFile.flatMap(readSecret))
        case .oauth2: return OAuth2TokenEndpoint.decide(request, served)
        case .mca: return MCATokenEndpoint.decide(request, served, tenant: MCATokenEndpoint.tenant(inPath: request.path) ?? "")
        case .gce: return GCEMetadataEndpoint.decide(request, served)
        }
    }

    /// The decision for `request`.
    public func decide(_ request: LocalRequest) -> EndpointDecision {
        decide(request, for: endpoint(forPath: request.path))
    }

    /// Names SDKs reach their credential endpoints by: loopback, and the link-local metadata
    /// addresses and names (an app's `/etc/hosts` may point them at the sidecar).
    static func isLocal(host field: String) -> Bool {
        var host = Substring(field.lowercased())
        if host.first == "[" {
            host = host.dropFirst().prefix { $0 != "]" }
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        if CredentialEndpointsConfig.isLoopback(String(host)) || host == "localhost" { return true }
        return ["metadata.google.internal", "metadata", "169.254.169.254", "169.254.170.2", "169.254.170.23", "fd00:ec2::23"].contains(host)
    }

    /// A refusal worded as `kind`'s service words its errors (GCE's text with
    /// `Metadata-Flavor`, an OAuth error, Azure's error, AWS's code and message).
    public static func refusal(_ kind: CredentialEndpoint.Kind, status: Int, code: String, _ message: String,
                               headers: [(String, String)] = []) -> LocalResponse {
        switch kind {
        case .gce: return GCEMetadataEndpoint.plain(status, message, extra: headers)
        case .mca, .oauth2: return ClientCredentialsRequest.error(status, code, message, extra: headers)
        case .azure: return AzureIdentityEndpoint.error(status, code, message, extra: headers)
        case .aws: return AWSContainerEndpoint.error(status, message, extra: headers)
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
    public static let awsPlaceholderSecret = "token-sidecar-placeholder-secret-not-a-key"
    /// The session token handed out with an AWS placeholder key id (the re-signing drops it).
    public static let awsPlaceholderSessionToken = "token-sidecar-placeholder-session-token"

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
