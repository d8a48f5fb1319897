import HTTPMessage

/// A generic RFC 6749 token endpoint (client credentials, §4.4) for apps built on a
/// client-credentials library: the client authenticates with the credential's client id and any
/// secret, Basic or in the form. A `scope` the credential's tokens do not carry is refused
/// (`invalid_scope`): the sidecar has one token per credential.
enum OAuth2TokenEndpoint {
    private static let realm = "token-sidecar"

    static func decide(_ request: LocalRequest, _ endpoint: ServedEndpoint) -> EndpointDecision {
        let presented: ClientCredentialsRequest
        switch ClientCredentialsRequest.read(request, realm: realm) {
        case .request(let read): presented = read
        case .refused(let answer): return .answer(answer)
        }
        guard let client = endpoint.clientId, ClientCredentialsRequest.constantTimeEqual(presented.clientId, client) else {
            return .answer(ClientCredentialsRequest.error(401, "invalid_client", "unknown client",
                                                          challenge: presented.usedBasic ? realm : nil))
        }
        guard let scope = presented.form.first("scope") else { return .grant(endpoint, .oauth(scope: nil)) }
        let asked = scope.split(separator: " ").map(String.init)
        guard asked.allSatisfy(endpoint.scopes.contains) else {
            return .answer(ClientCredentialsRequest.error(400, "invalid_scope",
                                                          "this credential's tokens carry the scopes \(endpoint.scopes.joined(separator: " ")) only"))
        }
        return .grant(endpoint, .oauth(scope: asked.joined(separator: " ")))
    }
}
