import Config
import CredentialEndpoints
import HTTP1
import HTTPMessage
import XCTest

/// A configuration with one credential of each kind the endpoints serve, each with a placeholder.
let endpointsYAML = """
    credentials:
      mca: {type: mca, serverUrl: "https://mca.test/imf-authserver", tenantId: tenant-1, clientId: client-1, secret: s, placeholder: tsp_mca_placeholder_0001}
      partner: {type: oauth2, tokenUrl: "https://idp.test/token", clientId: partner-app, secret: s, scope: "read write", placeholder: tsp_partner_placeholder_01}
      entra: {type: oauth2, tokenUrl: "https://login.test/token", clientId: 0000-entra, secret: s, scope: "https://vault.azure.net/.default", placeholder: tsp_entra_placeholder_0001}
      aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR, accessKeyIdFile: /dev/null, secretAccessKeyFile: /dev/null}
      gcp: {type: static, token: real-gcp-token, placeholder: tsp_gcp_placeholder_00001}
    credentialEndpoints:
      listen: 127.0.0.1:9902
      mca: {credential: mca}
      oauth2: {credential: partner}
      gce: {credential: gcp, projectId: my-project, email: app@my-project.iam.gserviceaccount.com}
      azure: {credential: entra, identityHeaderFile: /run/identity-header}
      aws: {credential: aws, authorizationTokenFile: /run/aws-auth}
    """

/// The router of ``endpointsYAML``; the secret files read as `identity-secret` and `aws-secret`.
func makeRouter(_ yaml: String = endpointsYAML) throws -> CredentialEndpointRouter {
    let config = try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: [:])
    let section = try XCTUnwrap(config.credentialEndpoints)
    return CredentialEndpointRouter(section, credentials: config.credentials) { path in
        ["/run/identity-header": "identity-secret", "/run/aws-auth": "aws-secret"][path]
    }
}

/// A request as the listener would build it from a head (target split into path and query).
func request(_ method: String, _ target: String, _ fields: [(String, String)] = [], body: String = "") -> LocalRequest {
    var head = HTTPFields()
    for (name, value) in fields { head.append(name, value) }
    let mark = target.firstIndex(of: "?")
    return LocalRequest(method: method, path: String(target[..<(mark ?? target.endIndex)]),
                        query: mark.map { FormDecoding.items(target[target.index(after: $0)...]) } ?? [],
                        fields: head, body: Array(body.utf8))
}

/// The answer of a decision answered at once (fails for a grant).
func answered(_ decision: EndpointDecision, file: StaticString = #filePath, line: UInt = #line) -> LocalResponse? {
    guard case .answer(let response) = decision else {
        XCTFail("expected an answer, got a grant", file: file, line: line)
        return nil
    }
    return response
}

/// The grant format of a decision (fails for an answer).
func granted(_ decision: EndpointDecision, file: StaticString = #filePath, line: UInt = #line) -> (String, GrantFormat)? {
    switch decision {
    case .grant(let endpoint, let format): return (endpoint.config.credential, format)
    case .answer(let response):
        XCTFail("expected a grant, got \(response.status) \(String(decoding: response.body, as: UTF8.self))", file: file, line: line)
        return nil
    }
}

extension LocalResponse {
    /// The body as text.
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A Basic header for `id:secret`.
func basic(_ id: String, _ secret: String) -> (String, String) {
    ("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString())
}
