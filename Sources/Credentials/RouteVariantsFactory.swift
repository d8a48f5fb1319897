import Config
import EventLoop
import Logging
import TokenManager
import Tracing

/// Builds the per-request tokens of a route (``TokenVariants``): per scope set or audience the
/// app asks for, and per caller for `clientAuthorization: exchange`.
public enum RouteVariantsFactory {
    /// The variants of `route`, or nil when it fetches no token per request. `credential` is the
    /// route's (an `oauth2` one; the loader guarantees it). Throws naming the route when a
    /// secret, key or file of the credential cannot be used.
    public static func make(route: RouteConfig, credential: CredentialConfig, capacity: Int, environment: [String: String],
                            tokenLoop: EventLoop, logger: Logger, tracer: Tracer? = nil) throws -> TokenVariants? {
        guard route.exchange != nil || route.requested != nil else { return nil }
        guard case .oauth2(let oauth) = credential.kind else {
            throw FactoryError("routes '\(route.host)': per-request tokens need an oauth2 credential; '\(credential.name)' is not one")
        }
        let name = credential.name
        let proof = try CredentialFactory.oauth2Proof(oauth, name: name, environment: environment, logger: logger)
        let build = CredentialFactory.oauth2Builder(oauth)
        let dpop = try CredentialFactory.dpopKeySource(oauth, name: name)
        let certificate = try CredentialFactory.certificateFiles(oauth, name: name)
        let connector = TokenLoopConnector(try CredentialFactory.connector(for: oauth.tls, name: name, logger: logger))
        let exchange = route.exchange
        let actor = exchange?.actorTokenFile.map {
            AssertionFile(path: $0, key: "actorTokenFile", requiresJWT: exchange?.actorTokenType == STSSettings.jwtTokenType)
        }
        let wallClock = SystemTokenClock()
        let tracing = tracer.flatMap { CredentialFactory.fetchTracing(credential, tracer: $0, exchange: route.exchange != nil) }
        // An exchange route asks for what its `exchange:` names; a per-request route for the
        // credential's own scope, audience and resource unless the request names others.
        let defaults = exchange.map { (scope: $0.scope, audience: $0.audience, resource: $0.resource) }
            ?? (scope: oauth.scope, audience: oauth.audience, resource: oauth.resource)
        return TokenVariants(name: name, capacity: capacity, loop: tokenLoop) { key, subject, gate in
            let scope = key.scope ?? defaults.scope
            let audience = key.audience ?? defaults.audience
            let resource = defaults.resource
            var source = TokenRequestSource(scope: scope, audience: audience, resource: resource,
                                            notAfter: subject.flatMap(JWTExpiry.expiry(of:))) { () throws(TokenFetchError) in
                let current = try proof()
                var grant = TokenEndpointRequest.Grant.clientCredentials
                if let subject, let exchange {
                    grant = .sts(STSParameters(
                        subjectToken: subject, subjectTokenType: exchange.subjectTokenType,
                        actorToken: try actor?.current(now: wallClock.wallClockSeconds), actorTokenType: exchange.actorTokenType,
                        requestedTokenType: exchange.requestedTokenType))
                }
                return try TokenRequestSource.building { () throws(TokenEndpointError) in
                    try build(current, grant, scope, audience, resource)
                }
            }
            source.dpop = dpop
            source.certificate = certificate
            // A token for one caller is fetched when that caller needs it, never ahead for nobody.
            let settings = CredentialFactory.refreshSettings(oauth.fetch, refreshAhead: subject == nil)
            let transport = HTTPTokenTransport(loop: tokenLoop, timeout: settings.fetchTimeout, connector: connector.connect)
            return ManagedCredential(name: name, source: source, settings: settings, transport: transport, loop: tokenLoop,
                                     logger: logger, variant: key.description,
                                     refusalCodes: subject == nil ? TokenFetchError.refusalCodes : TokenFetchError.exchangeRefusalCodes,
                                     gate: gate, tracing: tracing)
        }
    }
}

/// A token-server connector handed to variants made on worker threads; it is only ever called
/// on the token loop (by their transports), one TLS context shared by all of them.
private struct TokenLoopConnector: @unchecked Sendable {
    let connect: TokenConnector
    init(_ connect: @escaping TokenConnector) { self.connect = connect }
}
