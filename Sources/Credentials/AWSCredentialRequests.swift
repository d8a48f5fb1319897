import Config
import HTTP1
import TokenManager

/// The requests that fetch an `aws` credential's temporary keys: STS AssumeRoleWithWebIdentity
/// with the projected token (read before each call: the kubelet rotates it), or a GET of the
/// container credentials endpoint with its authorization token (read before each call). Each
/// answer is parsed by ``AWSCredentialsAnswer`` and refreshed ahead of its `Expiration`.
enum AWSCredentialRequests {
    /// The request source of `source`; nil for files (nothing is fetched).
    static func source(_ source: AWSCredentialSource, name: String) throws -> TokenRequestSource? {
        switch source {
        case .files:
            return nil
        case .webIdentity(let identity):
            let endpoint = try endpoint(identity.stsEndpoint, name: name)
            let file = CredentialFile(key: "webIdentity.tokenFile", path: identity.tokenFile)
            return TokenRequestSource { () throws(TokenFetchError) in
                try webIdentityRequest(identity, endpoint: endpoint, token: try text(of: file))
            }
        case .containerCredentials(let container):
            let endpoint = try endpoint(container.uri, name: name)
            let file = container.authorizationTokenFile.map { CredentialFile(key: "containerCredentials.authorizationTokenFile", path: $0) }
            return TokenRequestSource { () throws(TokenFetchError) in
                try containerRequest(endpoint: endpoint, authorization: try file.map { file throws(TokenFetchError) in try text(of: file) })
            }
        }
    }

    /// `Action=AssumeRoleWithWebIdentity` (unsigned: the web identity token is the proof).
    static func webIdentityRequest(_ identity: AWSWebIdentity, endpoint: TokenEndpoint, token: String) throws(TokenFetchError) -> TokenEndpointRequest {
        var form: [(name: String, value: String)] = [("Action", "AssumeRoleWithWebIdentity"), ("Version", "2011-06-15"),
                                                     ("RoleArn", identity.roleArn), ("RoleSessionName", identity.sessionName),
                                                     ("WebIdentityToken", token)]
        if let duration = identity.duration { form.append(("DurationSeconds", String(duration.components.seconds))) }
        let body = Array(FormURLEncoding.encode(form).utf8)
        var fields = HTTPFields()
        fields.append("Host", endpoint.authority)
        fields.append("User-Agent", "token-sidecar")
        fields.append("Accept", "text/xml")
        fields.append("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
        fields.append("Content-Length", String(body.count))
        fields.append("Connection", "close")
        var request = TokenEndpointRequest(endpoint: endpoint, fields: fields, body: body)
        request.tokenField = .awsCredentials
        return request
    }

    /// `GET` the container credentials endpoint, with `Authorization` when a token file is given.
    static func containerRequest(endpoint: TokenEndpoint, authorization: String?) throws(TokenFetchError) -> TokenEndpointRequest {
        var fields = HTTPFields()
        fields.append("Host", endpoint.authority)
        fields.append("User-Agent", "token-sidecar")
        fields.append("Accept", "application/json")
        if let authorization { fields.append("Authorization", authorization) }
        fields.append("Connection", "close")
        var request = TokenEndpointRequest(endpoint: endpoint, method: "GET", fields: fields, body: [])
        request.tokenField = .awsCredentials
        return request
    }

    private static func endpoint(_ url: EndpointURL, name: String) throws -> TokenEndpoint {
        do {
            return try TokenEndpoint(url: url.description)
        } catch {
            throw FactoryError("credential '\(name)': \(error)")
        }
    }

    /// A token file's content, trimmed; an empty one is an error naming the file.
    private static func text(of file: CredentialFile) throws(TokenFetchError) -> String {
        let text = String(decoding: try file.read(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw file.problem("is empty") }
        return text
    }
}
