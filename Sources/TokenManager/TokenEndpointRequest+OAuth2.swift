extension TokenEndpointRequest {
    /// An RFC 6749 §4.4 client credentials request.
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
        guard !clientId.isEmpty else { throw .missingSetting("clientId") }
        guard !secret.isEmpty else { throw .missingSetting("secret") }
        let endpoint = try TokenEndpoint(url: tokenURL)
        let scope = scope.flatMap { $0.isEmpty ? nil : $0 }
        let audience = audience.flatMap { $0.isEmpty ? nil : $0 }
        let resource = resource.flatMap { $0.isEmpty ? nil : $0 }

        var form: [(name: String, value: String)] = [("grant_type", "client_credentials")]
        var basic: String?
        switch authentication {
        case .clientSecretBasic:
            basic = FormURLEncoding.encode(clientId) + ":" + FormURLEncoding.encode(secret)
        case .clientSecretPost:
            form.append(("client_id", clientId))
            form.append(("client_secret", secret))
        }
        if let scope { form.append(("scope", scope)) }
        if let audience { form.append(("audience", audience)) }
        if let resource { form.append(("resource", resource)) }
        form += extraParameters
        let body = Array(FormURLEncoding.encode(form).utf8)
        let fields = formFields(endpoint: endpoint, bodyLength: body.count, basicCredentials: basic)
        return TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body,
                                    scope: scope, audience: audience, resource: resource)
    }
}
