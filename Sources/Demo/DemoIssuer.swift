import JSON
import Admin
import EventLoop
import HTTPMessage
import CredentialEndpoints
import Proxy

/// A demo OAuth 2.0 token endpoint (client-credentials grant, RFC 6749 §4.4) for
/// `token-sidecar demo`: no real identity provider needed.
///
/// `POST /oauth/token` with `grant_type=client_credentials`, authenticated by
/// `client_secret_basic` (RFC 6749 §2.3.1: id and secret form-encoded, then base64) or
/// `client_secret_post` (`client_id`/`client_secret` in the form). Answers
/// `{"access_token":"demo-…","token_type":"Bearer","expires_in":N}`; `401 invalid_client`
/// for unknown credentials, `400 unsupported_grant_type` for other grants, `400
/// invalid_request` for a missing grant or two authentication methods at once.
/// Issued tokens go into a ``DemoTokenRegistry`` for ``DemoBackend`` to check.
public final class DemoIssuer: LoopServer {
    /// The token endpoint's path.
    public static let tokenPath = "/oauth/token"

    private let server: LocalServer

    /// Binds `address` on `loop` and issues tokens to the one configured client, each valid
    /// for `expiresIn` seconds. Threading as for ``LocalServer``.
    public init(address: SocketAddress, loop: EventLoop, clientID: String, clientSecret: String,
                expiresIn: Int = 60, registry: DemoTokenRegistry) throws(EventLoopError) {
        let client = DemoClient(id: clientID, secret: clientSecret, expiresIn: expiresIn)
        server = try LocalServer(address: address, on: loop) { request, respond in
            respond(DemoIssuer.handle(request, client: client, registry: registry))
        }
    }

    /// The address actually bound.
    public var address: SocketAddress { server.address }

    /// Stops listening and closes every connection.
    public func close() { server.close() }

    /// The issuer's answer to one request.
    static func handle(_ request: LocalRequest, client: DemoClient, registry: DemoTokenRegistry) -> LocalResponse {
        guard request.path == tokenPath else { return .error(status: 404, "not found") }
        let presented: ClientCredentialsRequest
        switch ClientCredentialsRequest.read(request, realm: "token-sidecar-demo") {
        case .request(let read): presented = read
        case .refused(let answer): return answer
        }
        guard ClientCredentialsRequest.constantTimeEqual(presented.clientId, client.id),
              ClientCredentialsRequest.constantTimeEqual(presented.clientSecret, client.secret) else {
            return ClientCredentialsRequest.error(401, "invalid_client", "unknown client or wrong secret",
                                                  challenge: presented.usedBasic ? "token-sidecar-demo" : nil)
        }
        if let refusal = presented.grantRefusal { return refusal }
        let token = registry.issue(lifetime: .seconds(client.expiresIn))
        return ClientCredentialsRequest.answer(token: token, expiresIn: client.expiresIn)
    }
}

/// The one client a ``DemoIssuer`` knows.
struct DemoClient: Sendable {
    let id: String
    let secret: String
    let expiresIn: Int
}
