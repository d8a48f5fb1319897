/// The keys each level of the config accepts, used for unknown-key checks
/// and "did you mean" suggestions. Keep in sync with `ConfigDecoder`.
enum ConfigKeys {
    static let root = [
        "listen", "workers", "logLevel", "otherHosts", "cacheSize", "maxConnectionsPerUpstream", "maxClientConnections",
        "timeouts", "connect", "admin", "accessLog", "drainTimeout", "spool",
        "credentials", "routes", "sharedCache", "intercept", "tracing", "audit", "enforcement", "credentialEndpoints",
    ]
    /// Keys of `limits` (of a route or a credential), of its `rate` and of its `budget`.
    static let limits = ["rate", "budget"]
    static let limitsRate = ["perSecond", "burst"]
    static let limitsBudget = ["requests", "per"]
    /// Keys of `audit`.
    static let audit = ["file"]
    /// Keys of `credentialEndpoints` and of each of its endpoints.
    static let credentialEndpoints = ["listen", "allowNonLoopback"] + CredentialEndpoint.Kind.allCases.map(\.rawValue)
    static func credentialEndpoint(_ kind: CredentialEndpoint.Kind) -> [String] {
        let common = ["credential", "realTokens"]
        switch kind {
        case .mca: return common + ["tenantId", "clientId"]
        case .oauth2: return common + ["clientId", "path"]
        case .gce: return common + ["projectId", "email"]
        case .azure: return common + ["identityHeaderFile"]
        case .aws: return common + ["authorizationTokenFile"]
        }
    }
    /// Keys of `intercept`.
    static let intercept = ["caCertFile", "caKeyFile", "bundleFile", "caValidity"]
    static let spool = ["directory", "maxBytes"]
    /// Keys of `sharedCache`.
    static let sharedCache = ["url", "passwordFile", "usernameFile", "encryptionKeyFile", "keyPrefix", "timeout"] + tls
    /// Keys of `tracing`.
    static let tracing = ["endpoint", "tracesEndpoint", "headers", "serviceName", "resourceAttributes", "sampler", "samplerArg",
                          "disabled", "compression", "timeout", "batch"] + tls
    /// Keys of `tracing.batch`.
    static let tracingBatch = ["maxQueueSize", "scheduleDelay", "exportTimeout", "maxExportBatchSize"]
    /// Allowed range for `tracing.batch.maxQueueSize` and `maxExportBatchSize`.
    static let tracingBatchSize = 1...1_000_000
    static let credentialCommon = ["type", "placeholder", "placeholderFile", "limits"]
    static let staticToken = ["token", "tokenFile", "tokenEnv"]
    /// Client secret sources of `mca` and `oauth2`.
    static let secret = ["secret", "secretFile", "secretEnv"]
    /// Token renewal timing of `mca` and `oauth2`.
    static let tokenFetch = ["refreshAt", "defaultLifetime", "tokenWait", "unauthorizedRefetchInterval"]
    /// TLS settings of token servers and https upstreams.
    static let tls = ["caFile", "clientCert", "clientKey", "insecureSkipVerify"]
    /// How `private_key_jwt` and `client_secret_jwt` build their assertion.
    static let assertion = ["signingKeyFile", "signingKeyId", "assertionAudience", "assertionLifetime"]
    static let mca = ["serverUrl", "tenantId", "appId", "clientId", "auth"] + secret + tokenFetch + tls
    /// How an `oauth2` credential obtains its token (only `oauth2` has a grant).
    static let grant = ["grant", "subjectTokenFile", "subjectTokenType", "assertionSubject", "refreshTokenFile"]
    static let oauth2 = ["tokenUrl", "clientId"] + secret + ["auth"] + assertion + ["assertionFile", "scope", "audience", "resource", "params", "dpop"]
        + grant + tokenFetch + tls
    /// Keys of a `google_service_account` credential.
    static let googleServiceAccount = ["keyFile", "scope", "targetAudience", "subject"] + tokenFetch + tls
    /// Keys of an `aws` credential.
    static let aws = ["placeholderAccessKeyId", "accessKeyIdFile", "secretAccessKeyFile", "sessionTokenFile", "webIdentity",
                      "containerCredentials"] + tokenFetch
    /// Keys of an `aws` credential's `webIdentity`.
    static let awsWebIdentity = ["roleArn", "tokenFile", "stsEndpoint", "sessionName", "duration"] + tls
    /// Keys of an `aws` credential's `containerCredentials`.
    static let awsContainerCredentials = ["uri", "authorizationTokenFile"] + tls
    /// Every key any credential type accepts (for typo checks when the type is unknown).
    static let anyCredential: [String] = {
        var keys: [String] = []
        for key in credentialCommon + staticToken + mca + oauth2 + googleServiceAccount + aws where !keys.contains(key) { keys.append(key) }
        return keys
    }()
    static let route = ["host", "upstream", "preserveHost", "credential", "clientAuthorization", "intercept", "exchange",
                        "scopeHeader", "allowedScopes", "audienceHeader", "allowedAudiences", "clientCertificate", "upgrades",
                        "maxUpgradedLifetime", "upstreamProtocol", "inject", "rules", "enforcement", "limits"] + tls
    /// Keys of `routes[].rules[]`.
    static let rule = ["name", "methods", "paths"]
    /// Keys of `routes[].inject` (exactly one of `header`, `query`, `basic`; `format` with `header`).
    static let inject = ["header", "format", "query", "basic", "sigv4"]
    /// Keys of `routes[].inject.sigv4`.
    static let injectSigV4 = ["allowedRegions", "allowedServices", "signUnsigned", "maxHashedBody"]
    /// Keys of `routes[].inject.basic` when it is a mapping.
    static let injectBasic = ["username", "password"]
    /// Keys of an oauth2 credential's `dpop` mapping.
    static let dpop = ["keyFile"]
    /// Keys of `routes[].exchange`.
    static let exchange = ["audience", "scope", "resource", "requestedTokenType", "subjectTokenType", "actorTokenFile", "actorTokenType"]
    static let timeouts = ["connect", "responseHeaders", "clientHeader", "idle", "upstreamIdle", "bodyIdle", "upgradedIdle"]
    static let connect = ["allow"]
    /// Form parameters the sidecar sets itself (or that have their own key).
    static let reservedParams = ["grant_type", "client_id", "client_secret", "client_assertion", "client_assertion_type",
                                 "scope", "audience", "resource", "subject_token", "subject_token_type", "actor_token",
                                 "actor_token_type", "requested_token_type"]
    /// Credential types understood by this version.
    static let credentialTypes = ["static", "mca", "oauth2", "google_service_account", "aws"]
    /// Allowed range for `workers`.
    static let workers = 1...64
    /// Allowed range for `cacheSize`.
    static let cacheSize = 1...100_000
    /// Allowed range for `maxConnectionsPerUpstream`.
    static let maxConnectionsPerUpstream = 1...100_000
    /// Allowed range for `maxClientConnections`.
    static let maxClientConnections = 1...1_000_000
}
