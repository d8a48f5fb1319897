import HTTPMessage

/// A generic RFC 6749 token endpoint (client credentials, §4.4) for apps built on a
/// client-credentials library: the client authenticates with the credential's client id and any
/// secret, Basic or in the form. A `scope` the credential's tokens do not carry (its `scope`) is
/// refused (`invalid_scope`): the sidecar has one token per credential.
enum OAuth2TokenEndpoint {
    private static let realm = "token-sidecar"

    /// The decision for `request` to `endpoint`.
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
        if let refusal = presented.grantRefusal { return .answer(refusal) }
        // A credential whose scopes the file does not say takes any (its token is what it is).
        guard let scope = presented.form.first("scope"), let scopes = endpoint.scopes else { return .grant(endpoint, .oauth(scope: nil)) }
        let asked = scope.split(separator: " ").map(String.init)
        guard asked.allSatisfy(scopes.contains) else {
            return .answer(ClientCredentialsRequest.error(400, "invalid_scope",
                                                          "this credential's tokens carry the scopes \(scopes.joined(separator: " ")) only"))
        }
        return .grant(endpoint, .oauth(scope: asked.joined(separator: " ")))
    }
}
