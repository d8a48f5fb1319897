import JSON
import Admin
import EventLoop
import HTTPMessage
import Proxy
import Foundation

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
        guard request.method == "POST" else {
            return .error(status: 405, "method not allowed", headers: [("Allow", "POST")])
        }
        let form = FormDecoding.items(request.body)
        let basic = request.fields.first("Authorization").flatMap(basicCredentials)
        let posted = form.first("client_id").map { (id: $0, secret: form.first("client_secret") ?? "") }
        let presented: (id: String, secret: String)
        switch (basic, posted) {
        case (nil, nil):
            return oauthError(401, "invalid_client", "client authentication required", basicChallenge: true)
        case (.some, .some):
            // RFC 6749 §2.3: a client must not use more than one authentication method.
            return oauthError(400, "invalid_request", "more than one client authentication method")
        case (.some(let credentials), nil), (nil, .some(let credentials)):
            presented = credentials
        }
        guard constantTimeEqual(presented.id, client.id), constantTimeEqual(presented.secret, client.secret) else {
            return oauthError(401, "invalid_client", "unknown client or wrong secret", basicChallenge: basic != nil)
        }
        guard let grant = form.first("grant_type") else {
            return oauthError(400, "invalid_request", "grant_type is missing")
        }
        guard grant == "client_credentials" else {
            return oauthError(400, "unsupported_grant_type", "only client_credentials is supported")
        }
        let token = registry.issue(lifetime: .seconds(client.expiresIn))
        return .json(.object([
            ("access_token", .string(token)),
            ("token_type", .string("Bearer")),
            ("expires_in", .int(client.expiresIn)),
        ]), headers: noStore)
    }

    /// RFC 6749 §5.1: token responses must not be cached.
    private static let noStore = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]

    private static func oauthError(_ status: Int, _ code: String, _ description: String,
                                   basicChallenge: Bool = false) -> LocalResponse {
        // §5.2: a 401 to a client that used the Authorization header carries a challenge.
        let challenge = basicChallenge ? [("WWW-Authenticate", "Basic realm=\"token-sidecar-demo\"")] : []
        return .json(status: status, .object([
            ("error", .string(code)),
            ("error_description", .string(description)),
        ]), headers: noStore + challenge)
    }

    /// Decodes `Basic base64(urlencode(id):urlencode(secret))`; nil for other schemes or bad encoding.
    static func basicCredentials(_ header: String) -> (id: String, secret: String)? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic" else { return nil }
        // Foundation's decoder wants padding; clients that leave it out are accepted too.
        var encoded = String(parts[1].drop { $0 == " " })
        while encoded.utf8.count % 4 != 0 { encoded += "=" }
        guard let decoded = Data(base64Encoded: encoded) else { return nil }
        let text = String(decoding: decoded, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":") else { return nil }
        return (FormDecoding.decode(text[..<colon]), FormDecoding.decode(text[text.index(after: colon)...]))
    }

    /// Compares without an early exit on the first differing byte (no timing hint about the secret).
    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}

/// The one client a ``DemoIssuer`` knows.
struct DemoClient: Sendable {
    let id: String
    let secret: String
    let expiresIn: Int
}
