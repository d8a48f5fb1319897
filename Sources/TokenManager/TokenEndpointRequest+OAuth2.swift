extension TokenEndpointRequest {
    /// How an OAuth 2.0 client proves itself in one token request.
    public enum ClientProof: Sendable, Equatable {
        /// `client_secret_basic`: `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
        case secretBasic(String)
        /// `client_secret_post`: `client_id` and `client_secret` in the form.
        case secretPost(String)
        /// A JWT client assertion (RFC 7523 §2.2): `client_id`, `client_assertion_type` (jwt-bearer)
        /// and `client_assertion` in the form, no `Authorization`.
        case assertion(String)
        /// `tls_client_auth` (RFC 8705 §2): only `client_id` in the form; the TLS handshake's
        /// client certificate authenticates.
        case tlsCertificate
        /// No client authentication (a public client, RFC 6749 §2.1): `client_id` in the form
        /// when there is one. Token exchange only, where the subject token is the proof.
        case none
    }

    /// What is being traded for the token.
    public enum Grant: Sendable, Equatable {
        /// RFC 6749 §4.4: the client's own credentials.
        case clientCredentials
        /// RFC 8693 §2.1: a subject token (and optionally an actor token) exchanged for a token.
        case sts(STSParameters)
        /// RFC 7523 §2.1: a signed JWT (`assertion`) as the grant.
        case jwtBearer(assertion: String)
        /// RFC 6749 §6: a refresh token.
        case refreshToken(String)
    }

    /// The `grant_type` of an RFC 7523 §2.1 JWT bearer grant.
    public static let jwtBearerGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The `grant_type` of RFC 8693 token exchange.
    public static let stsGrantType = "urn:ietf:params:oauth:grant-type:token-exchange"

    /// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
    public static let jwtBearerAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// An RFC 6749 §4.4 client credentials request authenticated with the client secret.
    ///
    /// The form is `grant_type=client_credentials`, then (with ``ClientAuthentication/clientSecretPost``)
    /// `client_id` and `client_secret`, then `scope`, `audience` and `resource` when set and not
    /// empty, then `extraParameters` in order — every name and value form-urlencoded. With
    /// ``ClientAuthentication/clientSecretBasic`` the header is
    /// `Authorization: Basic base64(urlencode(clientId) ":" urlencode(secret))` (§2.3.1).
    public static func oauth2(
        tokenURL: String, clientId: String, secret: String,
        authentication: ClientAuthentication = .clientSecretBasic,
        scope: String? = nil, audience: String? = nil, resource: String? = nil,
        extraParameters: [(name: String, value: String)] = []
    ) throws(TokenEndpointError) -> TokenEndpointRequest {
        guard !secret.isEmpty else { throw .missingSetting("secret") }
        let proof: ClientProof = authentication == .clientSecretPost ? .secretPost(secret) : .secretBasic(secret)
        return try oauth2(tokenURL: tokenURL, clientId: clientId, proof: proof, scope: scope, audience: audience,
                          resource: resource, extraParameters: extraParameters)
    }

    /// A token request with any ``ClientProof`` and ``Grant``.
    ///
    /// The form is `grant_type` (`client_credentials`, or the token-exchange URN), then the
    /// proof's parameters (`client_id` first, except for Basic), then for token exchange
    /// `subject_token`, `subject_token_type`, `actor_token`, `actor_token_type` and
    /// `requested_token_type`, then `scope`, `audience` and `resource` when set and not empty,
    /// then `extraParameters` in order.
    public static func oauth2(
        tokenURL: String, clientId: String, proof: ClientProof, grant: Grant = .clientCredentials,
        scope: String? = nil, audience: String? = nil, resource: String? = nil,
        extraParameters: [(name: String, value: String)] = []
    ) throws(TokenEndpointError) -> TokenEndpointRequest {
        guard !clientId.isEmpty || proof == .none else { throw .missingSetting("clientId") }
        let endpoint = try TokenEndpoint(url: tokenURL)
        let scope = scope.flatMap { $0.isEmpty ? nil : $0 }
        let audience = audience.flatMap { $0.isEmpty ? nil : $0 }
        let resource = resource.flatMap { $0.isEmpty ? nil : $0 }

        var form: [(name: String, value: String)]
        switch grant {
        case .clientCredentials: form = [("grant_type", "client_credentials")]
        case .sts: form = [("grant_type", stsGrantType)]
        case .jwtBearer(let assertion):
            guard !assertion.isEmpty else { throw .missingSetting("assertion") }
            form = [("grant_type", jwtBearerGrantType), ("assertion", assertion)]
        case .refreshToken(let token):
            guard !token.isEmpty else { throw .missingSetting("refresh_token") }
            form = [("grant_type", "refresh_token"), ("refresh_token", token)]
        }
        var authorization: String?
        switch proof {
        case .secretBasic(let secret):
            guard !secret.isEmpty else { throw .missingSetting("secret") }
            authorization = "Basic " + Base64.encode(Array((FormURLEncoding.encode(clientId) + ":" + FormURLEncoding.encode(secret)).utf8))
        case .secretPost(let secret):
            guard !secret.isEmpty else { throw .missingSetting("secret") }
            form.append(("client_id", clientId))
            form.append(("client_secret", secret))
        case .assertion(let assertion):
            guard !assertion.isEmpty else { throw .missingSetting("client_assertion") }
            form.append(("client_id", clientId))
            form.append(("client_assertion_type", jwtBearerAssertionType))
            form.append(("client_assertion", assertion))
        case .tlsCertificate:
            form.append(("client_id", clientId))
        case .none:
            if !clientId.isEmpty { form.append(("client_id", clientId)) }
        }
        if case .sts(let exchange) = grant {
            guard !exchange.subjectToken.isEmpty else { throw .missingSetting("subject_token") }
            form.append(("subject_token", exchange.subjectToken))
            form.append(("subject_token_type", exchange.subjectTokenType))
            if let actor = exchange.actorToken {
                guard !actor.isEmpty else { throw .missingSetting("actor_token") }
                form.append(("actor_token", actor))
                form.append(("actor_token_type", exchange.actorTokenType))
            }
            if let requested = exchange.requestedTokenType, !requested.isEmpty {
                form.append(("requested_token_type", requested))
            }
        }
        if let scope { form.append(("scope", scope)) }
        if let audience { form.append(("audience", audience)) }
        if let resource { form.append(("resource", resource)) }
        form += extraParameters
        let body = Array(FormURLEncoding.encode(form).utf8)
        let fields = formFields(endpoint: endpoint, bodyLength: body.count, authorization: authorization)
        return TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body,
                                    scope: scope, audience: audience, resource: resource)
    }
}
