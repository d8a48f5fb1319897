import HTTPMessage
import JSON
import TokenManager

/// A client-credentials token request (RFC 6749 §4.4) as a token endpoint reads it: the client
/// authenticated by `client_secret_basic` (§2.3.1: id and secret form-encoded, then base64) or
/// `client_secret_post` (`client_id`/`client_secret` in the form), never both, and
/// `grant_type=client_credentials`. Shared by the demo issuer and the credential endpoints.
public struct ClientCredentialsRequest: Sendable, Equatable {
    /// The client id presented.
    public let clientId: String
    /// The secret presented (the credential endpoints take any).
    public let clientSecret: String
    /// Whether the client authenticated with `Authorization: Basic` (a 401 then carries a challenge).
    public let usedBasic: Bool
    /// The form's fields.
    public let form: [QueryItem]

    /// What reading a request gave.
    public enum Read: Sendable {
        /// A well-formed client-credentials request.
        case request(ClientCredentialsRequest)
        /// The error answer.
        case refused(LocalResponse)
    }

    /// Reads `request` (a `POST`): the request, or the error answer (405, 401 `invalid_client`,
    /// 400 `invalid_request`) — `realm` names the 401's challenge. The grant is checked by
    /// ``grantRefusal`` once the client is known (a wrong client is a 401 whatever it asks).
    public static func read(_ request: LocalRequest, realm: String) -> Read {
        guard request.method == "POST" else {
            return .refused(.error(status: 405, "method not allowed: a token request is a POST", headers: [("Allow", "POST")]))
        }
        let form = FormDecoding.items(request.body)
        let basic = request.fields.first("Authorization").flatMap(basicCredentials)
        let posted = form.first("client_id").map { (id: $0, secret: form.first("client_secret") ?? "") }
        let presented: (id: String, secret: String)
        switch (basic, posted) {
        case (nil, nil):
            return .refused(error(401, "invalid_client", "client authentication required", challenge: realm))
        case (.some(let header), .some(let form)) where header.id != form.id || form.secret != "":
            // §2.3: a client must not use more than one authentication method (some libraries
            // repeat the Basic header's client_id in the form: that alone is one method).
            return .refused(error(400, "invalid_request", "more than one client authentication method"))
        case (.some(let credentials), _), (nil, .some(let credentials)):
            presented = credentials
        }
        return .request(ClientCredentialsRequest(clientId: presented.id, clientSecret: presented.secret, usedBasic: basic != nil, form: form))
    }

    /// The answer refusing the request's grant: 400 `invalid_request` without one,
    /// `unsupported_grant_type` for any but `client_credentials`; nil when it is that.
    public var grantRefusal: LocalResponse? {
        guard let grant = form.first("grant_type") else { return Self.error(400, "invalid_request", "grant_type is missing") }
        guard grant == "client_credentials" else {
            return Self.error(400, "unsupported_grant_type", "only client_credentials is supported")
        }
        return nil
    }

    /// §5.1: token responses must not be cached.
    public static let noStore = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]

    /// An error answer (§5.2) `{"error", "error_description"}`; a 401 to a client that used the
    /// Authorization header carries a Basic challenge for `realm`.
    public static func error(_ status: Int, _ code: String, _ description: String, challenge realm: String? = nil,
                             extra: [(String, String)] = []) -> LocalResponse {
        let challenge = realm.map { [("WWW-Authenticate", "Basic realm=\"\($0)\"")] } ?? []
        return .json(status: status, .object([("error", .string(code)), ("error_description", .string(description))]),
                     headers: noStore + challenge + extra)
    }

    /// A successful answer (§5.1): `access_token`, `token_type: Bearer`, `expires_in`, and
    /// `scope` when given.
    public static func answer(token: String, expiresIn: Int, scope: String? = nil) -> LocalResponse {
        var fields: [(String, JSONValue)] = [("access_token", .string(token)), ("token_type", .string("Bearer")),
                                             ("expires_in", .int(expiresIn))]
        if let scope { fields.append(("scope", .string(scope))) }
        return .json(.object(fields), headers: noStore)
    }

    /// Decodes `Basic base64(urlencode(id):urlencode(secret))`; nil for other schemes or bad encoding.
    public static func basicCredentials(_ header: String) -> (id: String, secret: String)? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Base64.decodeURL(parts[1].drop { $0 == " " }) else { return nil }
        let text = String(decoding: decoded, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":") else { return nil }
        return (FormDecoding.decode(text[..<colon]), FormDecoding.decode(text[text.index(after: colon)...]))
    }

    /// Compares without an early exit on the first differing byte (no timing hint about a secret).
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}
