/// `type: aws`: the AWS credentials requests are re-signed with (Signature Version 4), and the
/// placeholder access key id the app signs with instead.
public struct AWSCredentialConfig: Sendable, Equatable {
    /// `placeholderAccessKeyId`: what the app's SDK signs with (any secret); a request signed
    /// with another key id is refused.
    public var placeholderAccessKeyId: String
    /// Where the real credentials come from.
    public var source: AWSCredentialSource
    /// `refreshAt`, `tokenWait`, …: how temporary credentials are refreshed (as tokens are).
    public var fetch: TokenFetchSettings
    /// How the STS or container credentials endpoint is reached (its `caFile`).
    public var tls: TLSSettings

    /// Creates the settings.
    public init(placeholderAccessKeyId: String, source: AWSCredentialSource, fetch: TokenFetchSettings = .default,
                tls: TLSSettings = .default) {
        self.placeholderAccessKeyId = placeholderAccessKeyId
        self.source = source
        self.fetch = fetch
        self.tls = tls
    }
}

/// Exactly one source of an `aws` credential's real keys.
public enum AWSCredentialSource: Sendable, Equatable {
    /// `accessKeyIdFile`, `secretAccessKeyFile` and optional `sessionTokenFile`, re-read when they change.
    case files(accessKeyIdFile: String, secretAccessKeyFile: String, sessionTokenFile: String?)
    /// `webIdentity:` STS AssumeRoleWithWebIdentity with a projected token file (EKS IRSA).
    case webIdentity(AWSWebIdentity)
    /// `containerCredentials:` a container credentials endpoint (EKS Pod Identity, ECS).
    case containerCredentials(AWSContainerCredentials)

    /// The key that selects it.
    public var key: String {
        switch self {
        case .files: return "accessKeyIdFile"
        case .webIdentity: return "webIdentity"
        case .containerCredentials: return "containerCredentials"
        }
    }
}

/// `webIdentity: {roleArn, tokenFile, stsEndpoint, sessionName, duration}`; `roleArn` and
/// `tokenFile` default to `AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE` (what EKS sets).
public struct AWSWebIdentity: Sendable, Equatable {
    /// The role assumed.
    public var roleArn: String
    /// The web identity token's file, read before each call (the kubelet rotates it).
    public var tokenFile: String
    /// STS (`https://sts.<AWS_REGION>.amazonaws.com` by default, else the global endpoint).
    public var stsEndpoint: EndpointURL
    /// `RoleSessionName`.
    public var sessionName: String
    /// `DurationSeconds` (nil: the role's default, one hour).
    public var duration: Duration?

    /// Creates the settings.
    public init(roleArn: String, tokenFile: String, stsEndpoint: EndpointURL, sessionName: String = "token-sidecar",
                duration: Duration? = nil) {
        self.roleArn = roleArn
        self.tokenFile = tokenFile
        self.stsEndpoint = stsEndpoint
        self.sessionName = sessionName
        self.duration = duration
    }
}

/// `containerCredentials: {uri, authorizationTokenFile}`; they default to
/// `AWS_CONTAINER_CREDENTIALS_FULL_URI` and `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`.
public struct AWSContainerCredentials: Sendable, Equatable {
    /// The endpoint (`http://169.254.170.23/v1/credentials` for EKS Pod Identity).
    public var uri: EndpointURL
    /// The file whose content goes in `Authorization`, read before each call (nil: none).
    public var authorizationTokenFile: String?

    /// Creates the settings.
    public init(uri: EndpointURL, authorizationTokenFile: String? = nil) {
        self.uri = uri
        self.authorizationTokenFile = authorizationTokenFile
    }
}
