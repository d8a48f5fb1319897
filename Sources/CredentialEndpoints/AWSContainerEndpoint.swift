import Admin
import HTTPMessage
import JSON

/// The AWS container credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI` +
/// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, as EKS Pod Identity and ECS serve it): `GET` with
/// `Authorization` equal to the token file's content → `AccessKeyId`, `SecretAccessKey`,
/// `Token`, `Expiration` — the credential's placeholder key id with a placeholder secret and
/// session token, which the `sigv4` routes' re-signing replaces (or, with `realTokens`, the
/// real keys).
enum AWSContainerEndpoint {
    /// Where it answers.
    static let path = "/aws/credentials"

    /// The decision for `request`; `authorizationToken` is the file's value (nil: unreadable).
    static func decide(_ request: LocalRequest, _ endpoint: ServedEndpoint, authorizationToken: @autoclosure () -> String?) -> EndpointDecision {
        guard request.method == "GET" else {
            return .answer(error(405, "method not allowed: the credentials endpoint answers GET only", extra: [("Allow", "GET")]))
        }
        guard let expected = authorizationToken() else {
            return .answer(error(503, "the authorization token file cannot be read"))
        }
        guard let sent = request.fields.first("Authorization"), ClientCredentialsRequest.constantTimeEqual(sent, expected) else {
            return .answer(error(401, "missing or wrong Authorization"))
        }
        return .grant(endpoint, .aws)
    }

    /// The credentials, expiring with the real ones (a static key set: in an hour, asked again).
    static func answer(_ grant: EndpointGrant, now: Double) -> LocalResponse {
        guard let keys = grant.aws else { return .error(status: 500, "not an AWS credential") }
        var fields: [(String, JSONValue)] = [("AccessKeyId", .string(keys.accessKeyId)), ("SecretAccessKey", .string(keys.secretAccessKey))]
        if let session = keys.sessionToken { fields.append(("Token", .string(session))) }
        fields.append(("Expiration", .string(WallClockTime(secondsSince1970: Double(grant.expiresOn(now: now))).iso8601)))
        return .json(.object(fields), headers: ClientCredentialsRequest.noStore)
    }

    /// An error as the container credentials endpoint words it.
    static func error(_ status: Int, _ message: String, extra: [(String, String)] = []) -> LocalResponse {
        .json(status: status, .object([("code", .string(status == 401 ? "AccessDenied" : "Error")), ("message", .string(message))]),
              headers: extra)
    }
}
