import Config
import EventLoop
import Logging
import TokenManager

/// Builds the runtime credentials a configuration describes.
public enum CredentialFactory {
    /// One ``Credential`` per configured credential. Static tokens are read now; `mca` and
    /// `oauth2` credentials become ``ManagedCredential``s whose fetches run on `tokenLoop`
    /// (they start fetching when ``CredentialRuntime`` starts them). Throws when a secret or a
    /// TLS file cannot be read (the error names the credential and source, never the secret).
    public static func make(from config: SidecarConfig, environment: [String: String],
                            tokenLoop: EventLoop? = nil, logger: Logger = Logger(label: "token-sidecar")) throws -> CredentialSet {
        let cache = TokenCache(capacity: config.cacheSize)
        return CredentialSet(try config.credentials.map {
            try make($0, environment: environment, tokenLoop: tokenLoop, cache: cache, logger: logger)
        })
    }

    /// Builds one credential (see ``make(from:environment:tokenLoop:logger:)``).
    public static func make(_ credential: CredentialConfig, environment: [String: String], tokenLoop: EventLoop?,
                            cache: TokenCache, logger: Logger) throws -> any Credential {
        switch credential.kind {
        case .staticToken(let settings):
            let token = try settings.source.read(environment: environment)
            return StaticCredential(name: credential.name, token: token)
        case .mca(let mca):
            let build = { try tokenRequest(for: credential, environment: environment)! }
            return try managed(credential.name, try build(), rebuild: mca.secret?.isFile == true ? build : nil,
                               mca.fetch, mca.tls, tokenLoop, cache, logger)
        case .oauth2(let oauth):
            let build = { try tokenRequest(for: credential, environment: environment)! }
            return try managed(credential.name, try build(), rebuild: oauth.secret?.isFile == true ? build : nil,
                               oauth.fetch, oauth.tls, tokenLoop, cache, logger)
        }
    }

    /// The token request a managed credential sends (reading its secret now), or `nil` for a
    /// static credential. Errors name the credential, never the secret.
    public static func tokenRequest(for credential: CredentialConfig, environment: [String: String]) throws -> TokenEndpointRequest? {
        switch credential.kind {
        case .staticToken:
            return nil
        case .mca(let mca):
            guard let secret = mca.secret, let clientId = mca.clientId else {
                throw FactoryError("credential '\(credential.name)': auth: \(mca.auth.rawValue) is not supported yet")
            }
            return try endpointRequest(credential.name) {
                try TokenEndpointRequest.mca(serverURL: mca.serverUrl.description, tenantId: mca.tenantId,
                                             clientId: clientId, secret: try secret.read(environment: environment))
            }
        case .oauth2(let oauth):
            guard let secret = oauth.secret, !oauth.auth.signsAssertion else {
                throw FactoryError("credential '\(credential.name)': auth: \(oauth.auth.rawValue) is not supported yet")
            }
            return try endpointRequest(credential.name) {
                try TokenEndpointRequest.oauth2(
                    tokenURL: oauth.tokenUrl.description, clientId: oauth.clientId,
                    secret: try secret.read(environment: environment),
                    authentication: oauth.auth == .post ? .clientSecretPost : .clientSecretBasic,
                    scope: oauth.scope, audience: oauth.audience, resource: oauth.resource,
                    extraParameters: oauth.params.map { (name: $0.name, value: $0.value) })
            }
        }
    }

    /// The token request for one credential, with errors naming the credential.
    public static func endpointRequest(_ name: String, _ build: () throws -> TokenEndpointRequest) throws -> TokenEndpointRequest {
        do {
            return try build()
        } catch let error as TokenEndpointError {
            throw FactoryError("credential '\(name)': \(error)")
        }
    }

    private static func managed(_ name: String, _ request: TokenEndpointRequest,
                                rebuild: (() throws -> TokenEndpointRequest)?, _ fetch: TokenFetchSettings,
                                _ tls: TLSSettings, _ loop: EventLoop?, _ cache: TokenCache, _ logger: Logger) throws -> any Credential {
        guard let loop else { throw FactoryError("credential '\(name)': a token loop is needed for managed credentials") }
        let settings = TokenRefreshSettings(refreshAt: fetch.refreshAt, defaultLifetime: fetch.defaultLifetime, tokenWait: fetch.tokenWait,
                                            unauthorizedRefetchInterval: fetch.unauthorizedRefetchInterval)
        let transport = HTTPTokenTransport(loop: loop, timeout: settings.fetchTimeout, connector: try connector(for: tls, name: name))
        let credential = ManagedCredential(name: name, request: request, settings: settings, transport: transport,
                                           loop: loop, logger: logger, cache: cache)
        if let rebuild {
            // A secretFile is read again before every fetch: a rotated secret is used by the next
            // fetch without a restart. If it cannot be read, the last good request is kept.
            credential.requestProvider = {
                do {
                    return try rebuild()
                } catch {
                    logger.error("cannot re-read the secret file; using the previous secret",
                                 metadata: ["credential": .string(name), "error": .string("\(error)")])
                    return nil
                }
            }
        }
        return credential
    }

    /// Opens token-server connections: plain TCP, or TLS verified per the credential's settings.
    public static func connector(for tls: TLSSettings, name: String) throws -> TokenConnector {
        let context: TLSClientContext
        do {
            context = try TLSClientContext(TLSClientSettings(caFile: tls.caFile, clientCert: tls.clientCert,
                                                             clientKey: tls.clientKey, insecureSkipVerify: tls.insecureSkipVerify))
        } catch {
            throw FactoryError("credential '\(name)': \(error)")
        }
        return { host, port, useTLS, loop, delegate in
            useTLS ? Connection.connectTLS(host: host, port: port, context: context, on: loop, delegate: delegate)
                   : Connection.connect(host: host, port: port, on: loop, delegate: delegate)
        }
    }
}

/// A credential that cannot be built.
public struct FactoryError: Error, CustomStringConvertible {
    /// What went wrong, naming the credential (never a secret).
    public let description: String
    init(_ description: String) { self.description = description }
}

extension SecretSource {
    /// Whether the secret lives in a file (and so may be rotated while running).
    var isFile: Bool {
        if case .file = self { return true }
        return false
    }
}
