import HTTPMessage

/// The seed SDK's token endpoint, as IBM Mobile Client Access answers it: `POST
/// {serverUrl}/authorization/v1/apps/{tenantId}/token` (the SDK puts a `/` after `serverUrl`, so
/// any prefix and doubled slashes are accepted), `Authorization: Basic clientId:secret` (any
/// secret), `grant_type=client_credentials` → `{"access_token", "token_type": "Bearer",
/// "expires_in"}`. An unknown tenant or client gets 401, as MCA answers it.
enum MCATokenEndpoint {
    private static let realm = "imf-authserver"

    /// The tenant of a path ending in `/authorization/v1/apps/{tenantId}/token`, nil for another path.
    static func tenant(inPath path: String) -> Substring? {
        guard path.hasSuffix("/token") else { return nil }
        let apps = path.dropLast("/token".count)
        guard let slash = apps.lastIndex(of: "/"), apps[..<slash].hasSuffix("/authorization/v1/apps") else { return nil }
        let tenant = apps[apps.index(after: slash)...]
        return tenant.isEmpty ? nil : tenant
    }

    /// The decision for `request` to `endpoint`.
    static func decide(_ request: LocalRequest, _ endpoint: ServedEndpoint, tenant: Substring) -> EndpointDecision {
        let presented: ClientCredentialsRequest
        switch ClientCredentialsRequest.read(request, realm: realm) {
        case .request(let read): presented = read
        case .refused(let answer): return .answer(answer)
        }
        guard tenant == endpoint.tenantId ?? "", let client = endpoint.clientId,
              ClientCredentialsRequest.constantTimeEqual(presented.clientId, client) else {
            return .answer(ClientCredentialsRequest.error(401, "invalid_client", "unknown tenant or client",
                                                          challenge: presented.usedBasic ? realm : nil))
        }
        if let refusal = presented.grantRefusal { return .answer(refusal) }
        return .grant(endpoint, .oauth(scope: nil))
    }
}
