import Config
import Crypto
import EventLoop
import Logging
import TokenManager
import Tracing

/// Builds the runtime credentials a configuration describes.
public enum CredentialFactory {
    /// One ``Credential`` per configured credential. Static tokens are read now; `mca` and
    /// `oauth2` credentials become ``ManagedCredential``s whose fetches run on `tokenLoop`
    /// (they start fetching when ``CredentialRuntime`` starts them). Throws when a secret, a key,
    /// a certificate or a TLS file cannot be used (the error names the credential and the file,
    /// never the secret).
    public static func make(from config: SidecarConfig, environment: [String: String],
                            tokenLoop: EventLoop? = nil, logger: Logger = Logger(label: "token-sidecar")) throws -> CredentialSet {
        let cache = TokenCache(capacity: config.cacheSize)
        return CredentialSet(try config.credentials.map {
            try make($0, environment: environment, tokenLoop: tokenLoop, cache: cache, logger: logger)
        }, placeholders: try placeholders(of: config))
    }

    /// Every credential's placeholder, by name (a `placeholderFile` read, or generated and
    /// written; with `write: false` only checked).
    public static func placeholders(of config: SidecarConfig, write: Bool = true) throws -> [String: String] {
        var resolved: [String: String] = [:]
        for credential in config.credentials {
            guard let setting = credential.placeholder else { continue }
            resolved[credential.name] = try PlaceholderFile.resolve(setting, credential: credential.name, write: write)
        }
        return resolved
    }

    /// Builds one credential (see ``make(from:environment:tokenLoop:logger:)``).
    /// With `shared`, managed credentials share their tokens with the fleet through it.
    public static func make(_ credential: CredentialConfig, environment: [String: String], tokenLoop: EventLoop?,
                            cache: TokenCache, logger: Logger, shared: SharedTokenCache? = nil,
                            tracer: Tracer? = nil) throws -> any Credential {
        let tracing = tracer.flatMap { fetchTracing(credential, tracer: $0) }
        // Only with a shared cache: the material may read a file (a Google key, a token).
        let binding = shared.flatMap { cache in SharedCacheKeyMaterial.make(credential).map { cache.binding(material: $0) } }
        switch credential.kind {
        case .staticToken(let settings):
            let token = try settings.source.read(environment: environment)
            return StaticCredential(name: credential.name, token: token)
        case .mca(let mca):
            let source = try requestSource(for: credential, environment: environment, logger: logger)!
            return try managed(credential.name, source, mca.fetch, mca.tls, tokenLoop, cache, logger, binding, tracing)
        case .oauth2(let oauth):
            let source = try requestSource(for: credential, environment: environment, logger: logger)!
            return try managed(credential.name, source, oauth.fetch, oauth.tls, tokenLoop, cache, logger, binding, tracing)
        case .googleServiceAccount(let google):
            let source = try requestSource(for: credential, environment: environment, logger: logger)!
            return try managed(credential.name, source, google.fetch, google.tls, tokenLoop, cache, logger, binding, tracing)
        case .aws(let aws):
            guard case .files(let id, let secret, let session) = aws.source else {
                let source = try requestSource(for: credential, environment: environment, logger: logger)!
                return try managed(credential.name, source, aws.fetch, aws.tls, tokenLoop, cache, logger, binding, tracing)
            }
            do {
                let keys = try AWSKeyFiles(accessKeyIdFile: id, secretAccessKeyFile: secret, sessionTokenFile: session).read()
                return StaticCredential(name: credential.name, token: keys.tokenValue)
            } catch {
                throw FactoryError("credential '\(credential.name)': \(error.kindDescription)")
            }
        }
    }

    /// A Google service account's requests: the key file re-read when it changes, a new
    /// assertion per fetch (RS256, `kid` the key's id, `iss` its `client_email`, `aud` its
    /// `token_uri`, `scope` or `target_audience`, `sub` only for delegation), traded at the
    /// `token_uri` without client authentication (RFC 7523 §2.1).
    static func googleSource(_ google: GoogleServiceAccountConfig, name: String) throws -> TokenRequestSource {
        let file = ReloadingFile(CredentialFile(key: "keyFile", path: google.keyFile)) { bytes throws(CryptoError) in
            try GoogleServiceAccountKey(json: bytes)
        }
        do { _ = try file.current() } catch { throw FactoryError("credential '\(name)': \(error.kindDescription)") }
        let claims = google.scope.map { ["scope": $0] } ?? ["target_audience": google.targetAudience ?? ""]
        let wallClock = SystemTokenClock()
        return TokenRequestSource(scope: google.scope, audience: google.targetAudience) { () throws(TokenFetchError) in
            let key = try file.current()
            let assertion = ClientAssertion(issuer: key.clientEmail, subject: google.subject, audience: key.tokenURI, keyId: key.keyId,
                                            lifetime: .seconds(300), extraClaims: claims)
            let signed = try signing(assertion, with: .key(key.key), now: wallClock.wallClockSeconds, file.file.description)
            var request = try TokenRequestSource.building { () throws(TokenEndpointError) in
                try TokenEndpointRequest.oauth2(tokenURL: key.tokenURI, clientId: "", proof: .none, grant: .jwtBearer(assertion: signed))
            }
            if google.targetAudience != nil { request.tokenField = .idToken }
            return request
        }
    }

    /// Where a managed credential's token requests come from, or `nil` for a static credential.
    ///
    /// Everything that can be checked now is: secrets are read, keys and certificates parsed,
    /// an RSA key required where RS256 is, a key matched to its certificate. Only an
    /// `assertionFile` may be missing at start (a SPIFFE helper or the kubelet may write it
    /// later); each fetch re-reads it. Errors name the credential, never the secret.
    public static func requestSource(for credential: CredentialConfig, environment: [String: String],
                                     logger: Logger = Logger(label: "token-sidecar")) throws -> TokenRequestSource? {
        let name = credential.name
        switch credential.kind {
        case .staticToken:
            return nil
        case .aws(let aws):
            return try AWSCredentialRequests.source(aws.source, name: name)
        case .googleServiceAccount(let google):
            return try googleSource(google, name: name)
        case .mca(let mca):
            switch (mca.auth, mca.secret, mca.certificate) {
            case (.secret, let secret?, _):
                guard let clientId = mca.clientId else { throw FactoryError("credential '\(name)': clientId is missing") }
                let secrets = try RotatingSecret(secret, credential: name, environment: environment, logger: logger)
                let build: @Sendable (String) throws(TokenEndpointError) -> TokenEndpointRequest = { secret throws(TokenEndpointError) in
                    try TokenEndpointRequest.mca(serverURL: mca.serverUrl.description, tenantId: mca.tenantId,
                                                 clientId: clientId, secret: secret)
                }
                _ = try endpointRequest(name) { () throws(TokenEndpointError) in try build(secrets.current()) }
                return TokenRequestSource { () throws(TokenFetchError) in
                    try TokenRequestSource.building { () throws(TokenEndpointError) in try build(secrets.current()) }
                }
            case (.certificate, _, let files?):
                return try mcaCertificateSource(mca, files: files, name: name)
            default:
                throw FactoryError("credential '\(name)': auth: \(mca.auth.rawValue) lacks its \(mca.auth == .secret ? "secret" : "clientCert and clientKey")")
            }
        case .oauth2(let oauth):
            return try oauth2Source(oauth, name: name, environment: environment, logger: logger)
        }
    }

    private static func oauth2Source(_ oauth: OAuth2Config, name: String, environment: [String: String],
                                     logger: Logger) throws -> TokenRequestSource {
        var source = try oauth2Source(oauth, proof: oauth2Proof(oauth, name: name, environment: environment, logger: logger), name: name)
        source.dpop = try dpopKeySource(oauth, name: name)
        source.certificate = try certificateFiles(oauth, name: name)
        return source
    }

    /// The client certificate an oauth2 credential authenticates with (`tls_client_auth`,
    /// `self_signed_tls_client_auth`): its tokens are bound to it (RFC 8705 §3).
    static func certificateFiles(_ oauth: OAuth2Config, name: String) throws -> ClientIdentityFiles? {
        guard oauth.auth.usesClientCertificate, let cert = oauth.tls.clientCert, let key = oauth.tls.clientKey else { return nil }
        do {
            return try ClientIdentityFiles(certificatePath: cert, keyPath: key)
        } catch {
            throw FactoryError("credential '\(name)': \(error.kindDescription)")
        }
    }

    /// The DPoP key of an oauth2 credential with `dpop`: generated now, or read from its file
    /// (an unusable file stops start-up, naming it); nil without `dpop`.
    static func dpopKeySource(_ oauth: OAuth2Config, name: String) throws -> DPoPKeySource? {
        switch oauth.dpop {
        case nil:
            return nil
        case .generated:
            do {
                return DPoPKeySource(key: try DPoPKey.generated())
            } catch {
                throw FactoryError("credential '\(name)': dpop: no key could be generated (\(error))")
            }
        case .keyFile(let path):
            do {
                return try DPoPKeySource(keyFile: path)
            } catch {
                throw FactoryError("credential '\(name)': \(error.kindDescription)")
            }
        }
    }

    private static func oauth2Source(_ oauth: OAuth2Config, proof: @escaping @Sendable () throws(TokenFetchError) -> TokenEndpointRequest.ClientProof,
                                     name: String) throws -> TokenRequestSource {
        let build = oauth2Builder(oauth)
        // The URL and settings are checked now with a placeholder proof, so a bad one stops start-up.
        let placeholder: TokenEndpointRequest.ClientProof = oauth.auth == .none ? .none : .tlsCertificate
        _ = try endpointRequest(name) { () throws(TokenEndpointError) in
            try build(placeholder, .clientCredentials, oauth.scope, oauth.audience, oauth.resource)
        }
        switch oauth.grant {
        case .clientCredentials:
            return TokenRequestSource(scope: oauth.scope, audience: oauth.audience, resource: oauth.resource) { () throws(TokenFetchError) in
                let current = try proof()
                return try TokenRequestSource.building { () throws(TokenEndpointError) in
                    try build(current, .clientCredentials, oauth.scope, oauth.audience, oauth.resource)
                }
            }
        case .sts(let path, let type):
            // Workload identity federation: the file (a projected service-account token) is
            // the subject, re-read before every exchange (the kubelet rotates it).
            let subject = AssertionFile(path: path, key: "subjectTokenFile", requiresJWT: type == STSSettings.jwtTokenType)
            let wallClock = SystemTokenClock()
            return TokenRequestSource(scope: oauth.scope, audience: oauth.audience, resource: oauth.resource) { () throws(TokenFetchError) in
                let current = try proof()
                let grant = TokenEndpointRequest.Grant.sts(STSParameters(
                    subjectToken: try subject.current(now: wallClock.wallClockSeconds), subjectTokenType: type))
                return try TokenRequestSource.building { () throws(TokenEndpointError) in
                    try build(current, grant, oauth.scope, oauth.audience, oauth.resource)
                }
            }
        case .refreshToken(let path):
            // RFC 6749 §6: the file's refresh token (or the rotated one this process holds).
            let file = RefreshTokenFile(path: path)
            var source = TokenRequestSource(scope: oauth.scope, audience: oauth.audience, resource: oauth.resource) { () throws(TokenFetchError) in
                let current = try proof()
                let token = try file.current()
                return try TokenRequestSource.building { () throws(TokenEndpointError) in
                    try build(current, .refreshToken(token), oauth.scope, oauth.audience, oauth.resource)
                }
            }
            source.refreshTokens = file
            return source
        case .jwtBearer(let subject):
            // RFC 7523 §2.1: a new assertion, signed with the (re-read) signing key, per fetch.
            let key = try signingKey(oauth, name: name)
            let settings = oauth.assertion ?? JWTAssertionSettings()
            let assertion = ClientAssertion(issuer: oauth.clientId, subject: subject ?? oauth.clientId,
                                            audience: settings.audience ?? oauth.tokenUrl.description, keyId: settings.keyId,
                                            lifetime: settings.lifetime)
            let wallClock = SystemTokenClock()
            return TokenRequestSource(scope: oauth.scope, audience: oauth.audience, resource: oauth.resource) { () throws(TokenFetchError) in
                let current = try proof()
                let signed = try signing(assertion, with: .key(key.current()), now: wallClock.wallClockSeconds, key.file.description)
                return try TokenRequestSource.building { () throws(TokenEndpointError) in
                    try build(current, .jwtBearer(assertion: signed), oauth.scope, oauth.audience, oauth.resource)
                }
            }
        }
    }

    /// The `signingKeyFile` of an oauth2 credential, read now (an unusable key stops start-up)
    /// and re-read when it changes.
    static func signingKey(_ oauth: OAuth2Config, name: String) throws -> ReloadingFile<SigningKey> {
        guard let path = oauth.assertion?.signingKeyFile else { throw FactoryError("credential '\(name)': signingKeyFile is missing") }
        let key = ReloadingFile(CredentialFile(key: "signingKeyFile", path: path)) { bytes throws(CryptoError) in try SigningKey(pem: bytes) }
        do { _ = try key.current() } catch { throw FactoryError("credential '\(name)': \(error.kindDescription)") }
        return key
    }

    /// Builds an oauth2 credential's token request from a proof, a grant, scope, audience and
    /// resource (the credential's URL, client id and extra parameters fixed).
    typealias OAuth2Builder = @Sendable (TokenEndpointRequest.ClientProof, TokenEndpointRequest.Grant, String?, String?, String?)
        throws(TokenEndpointError) -> TokenEndpointRequest

    static func oauth2Builder(_ oauth: OAuth2Config) -> OAuth2Builder {
        let tokenURL = oauth.tokenUrl.description
        let extra = oauth.params.map { (name: $0.name, value: $0.value) }
        return { proof, grant, scope, audience, resource throws(TokenEndpointError) in
            try TokenEndpointRequest.oauth2(tokenURL: tokenURL, clientId: oauth.clientId, proof: proof, grant: grant, scope: scope,
                                            audience: audience, resource: resource, extraParameters: extra)
        }
    }

    /// How an oauth2 credential proves itself, made anew for each fetch (a rotated secret, a
    /// freshly signed assertion). Checks now what can be checked.
    static func oauth2Proof(_ oauth: OAuth2Config, name: String, environment: [String: String],
                            logger: Logger) throws -> @Sendable () throws(TokenFetchError) -> TokenEndpointRequest.ClientProof {
        let wallClock = SystemTokenClock()
        switch oauth.auth {
        case .basic, .post:
            let secrets = try RotatingSecret(oauth.secret, credential: name, environment: environment, logger: logger)
            let basic = oauth.auth == .basic
            return { basic ? .secretBasic(secrets.current()) : .secretPost(secrets.current()) }
        case .clientSecretJWT:
            let secrets = try RotatingSecret(oauth.secret, credential: name, environment: environment, logger: logger)
            let assertion = clientAssertion(oauth)
            return { () throws(TokenFetchError) in
                try .assertion(signing(assertion, with: .hs256(secret: secrets.current()), now: wallClock.wallClockSeconds, "secret"))
            }
        case .privateKeyJWT:
            let key = try signingKey(oauth, name: name)
            let assertion = clientAssertion(oauth)
            return { () throws(TokenFetchError) in
                try .assertion(signing(assertion, with: .key(key.current()), now: wallClock.wallClockSeconds, key.file.description))
            }
        case .assertionFile:
            guard let path = oauth.assertionFile else { throw FactoryError("credential '\(name)': assertionFile is missing") }
            let file = AssertionFile(path: path)
            return { () throws(TokenFetchError) in try .assertion(file.current(now: wallClock.wallClockSeconds)) }
        case .tlsClientAuth, .selfSignedTLSClientAuth:
            guard oauth.tls.clientCert != nil, oauth.tls.clientKey != nil else {
                throw FactoryError("credential '\(name)': auth: \(oauth.auth.rawValue) needs clientCert and clientKey")
            }
            return { .tlsCertificate }
        case .none:
            return { TokenEndpointRequest.ClientProof.none }
        }
    }

    private static func mcaCertificateSource(_ mca: MCAConfig, files: ClientCertificateFiles, name: String) throws -> TokenRequestSource {
        let certificate = ReloadingFile(CredentialFile(key: "clientCert", path: files.certificate)) { bytes throws(CryptoError) in
            try X509Certificate(pem: bytes)
        }
        let key = ReloadingFile(CredentialFile(key: "clientKey", path: files.key)) { bytes throws(CryptoError) in try SigningKey(pem: bytes) }
        let serverURL = mca.serverUrl.description
        let wallClock = SystemTokenClock()
        let make: @Sendable () throws(TokenFetchError) -> TokenEndpointRequest = { () throws(TokenFetchError) in
            let certificate = try certificate.current()
            let signingKey = try key.current()
            guard let clientId = mca.clientId ?? certificate.commonName, !clientId.isEmpty else {
                throw TokenFetchError(.clientAuthentication("clientCert \(files.certificate): the certificate has no subject CN; set clientId"))
            }
            let assertion: String
            do {
                assertion = try MCACertificateAssertion.signed(certificate: certificate, key: signingKey, now: wallClock.wallClockSeconds)
            } catch {
                throw TokenFetchError(.clientAuthentication("clientKey \(files.key): \(error)"))
            }
            return try TokenRequestSource.building { () throws(TokenEndpointError) in
                try TokenEndpointRequest.mcaCertificate(serverURL: serverURL, tenantId: mca.tenantId, clientId: clientId, assertion: assertion)
            }
        }
        do { _ = try make() } catch { throw FactoryError("credential '\(name)': \(error.kindDescription)") }
        return TokenRequestSource(make: make)
    }

    /// The RFC 7523 claims settings of a JWT-authenticated oauth2 credential.
    private static func clientAssertion(_ oauth: OAuth2Config) -> ClientAssertion {
        let settings = oauth.assertion ?? JWTAssertionSettings()
        return ClientAssertion(clientId: oauth.clientId, audience: settings.audience ?? oauth.tokenUrl.description,
                               keyId: settings.keyId, lifetime: settings.lifetime)
    }

    private static func signing(_ assertion: ClientAssertion, with signer: JWSSigner, now: Double,
                                _ what: String) throws(TokenFetchError) -> String {
        do {
            return try assertion.signed(with: signer, now: now)
        } catch {
            throw TokenFetchError(.clientAuthentication("\(what): \(error)"))
        }
    }

    /// The token request for one credential, with errors naming the credential.
    public static func endpointRequest(_ name: String, _ build: () throws(TokenEndpointError) -> TokenEndpointRequest) throws -> TokenEndpointRequest {
        do {
            return try build()
        } catch {
            throw FactoryError("credential '\(name)': \(error)")
        }
    }

    private static func managed(_ name: String, _ source: TokenRequestSource, _ fetch: TokenFetchSettings,
                                _ tls: TLSSettings, _ loop: EventLoop?, _ cache: TokenCache, _ logger: Logger,
                                _ shared: SharedTokenCache.Binding?, _ tracing: FetchTracing?) throws -> any Credential {
        guard let loop else { throw FactoryError("credential '\(name)': a token loop is needed for managed credentials") }
        let settings = refreshSettings(fetch)
        let transport = HTTPTokenTransport(loop: loop, timeout: settings.fetchTimeout, connector: try connector(for: tls, name: name, logger: logger))
        return ManagedCredential(name: name, source: source, settings: settings, transport: transport,
                                 loop: loop, logger: logger, cache: cache, shared: shared, tracing: tracing)
    }

    /// How a credential's fetches are named in spans: its grant and client authentication as
    /// configured (`client_secret_basic` for `auth: basic`, as RFC 8414 names the methods).
    public static func fetchTracing(_ credential: CredentialConfig, tracer: Tracer, exchange: Bool = false) -> FetchTracing? {
        switch credential.kind {
        case .staticToken:
            return nil
        case .mca(let mca):
            return FetchTracing(tracer: tracer, grant: "client_credentials",
                                clientAuth: mca.auth == .certificate ? "mca_certificate" : "client_secret_basic")
        case .oauth2(let oauth):
            let auth: String
            switch oauth.auth {
            case .basic: auth = "client_secret_basic"
            case .post: auth = "client_secret_post"
            default: auth = oauth.auth.rawValue
            }
            return FetchTracing(tracer: tracer, grant: exchange ? "token_exchange" : oauth.grant.name, clientAuth: auth)
        case .googleServiceAccount:
            return FetchTracing(tracer: tracer, grant: "jwt_bearer", clientAuth: "none")
        case .aws(let aws):
            switch aws.source {
            case .files: return nil
            case .webIdentity: return FetchTracing(tracer: tracer, grant: "aws_web_identity", clientAuth: "none")
            case .containerCredentials: return FetchTracing(tracer: tracer, grant: "aws_container_credentials", clientAuth: "none")
            }
        }
    }

    /// The refresh settings of a credential's `fetch` keys.
    static func refreshSettings(_ fetch: TokenFetchSettings, refreshAhead: Bool = true) -> TokenRefreshSettings {
        TokenRefreshSettings(refreshAt: fetch.refreshAt, defaultLifetime: fetch.defaultLifetime, tokenWait: fetch.tokenWait,
                             unauthorizedRefetchInterval: fetch.unauthorizedRefetchInterval, refreshAhead: refreshAhead)
    }

    /// Opens token-server connections: plain TCP, or TLS verified per the credential's settings.
    /// With a client certificate, its files are re-read before each connection and the TLS
    /// context rebuilt when they changed (a rotated certificate is used without a restart); a
    /// request bound to a certificate is sent with exactly that one (read when the request was
    /// made: a rotation in between cannot bind the token to another certificate than recorded).
    public static func connector(for tls: TLSSettings, name: String, logger: Logger = Logger(label: "token-sidecar")) throws -> TokenConnector {
        let contexts: ReloadingTLSContext
        do {
            contexts = try ReloadingTLSContext(tls)
        } catch {
            throw FactoryError("credential '\(name)': \(error)")
        }
        return { host, port, useTLS, identity, loop, delegate in
            guard useTLS else { return Connection.connect(host: host, port: port, on: loop, delegate: delegate) }
            let context = contexts.current(presenting: identity) { problem in
                logger.error("cannot reload the client certificate; using the previous one",
                             metadata: ["credential": .string(name), "error": .string(problem)])
            }
            return Connection.connectTLS(host: host, port: port, context: context, on: loop, delegate: delegate)
        }
    }
}

/// A credential that cannot be built.
public struct FactoryError: Error, CustomStringConvertible {
    /// What went wrong, naming the credential (never a secret).
    public let description: String
    init(_ description: String) { self.description = description }
}

extension TokenFetchError {
    /// The message without the "cannot authenticate" prefix, for start-up errors.
    var kindDescription: String {
        if case .clientAuthentication(let why) = kind { return why }
        return description
    }
}
