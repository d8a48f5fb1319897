/// Turns a token endpoint's response into a ``TokenGrant`` or a classified ``TokenFetchError``.
public enum TokenResponseParser {
    /// The longest lifetime believed (a larger `expires_in` is clamped to it).
    public static let maxLifetime: Duration = .seconds(366 * 86_400)

    /// Parses `response`.
    ///
    /// A 200 needs a JSON object with a non-empty `access_token` made of visible ASCII; a
    /// `token_type`, when present, must be `Bearer` (any case), `N_A` (RFC 8693), or `DPoP` when
    /// the request carried a DPoP proof (`binding`: the grant is then bound to it). The lifetime is `expires_in` (a
    /// number or numeric string, > 0); without it, a JWT token's `exp` minus `wallClock`; without
    /// that, `defaultLifetime`. Any other status is an error, with the OAuth `error` code when
    /// the body has one, and `Retry-After` for 429 and 5xx.
    ///
    /// - Parameters:
    ///   - defaultLifetime: the lifetime when the response does not say.
    ///   - wallClock: now, in seconds since 1970 (JWT `exp`, `Retry-After` dates).
    ///   - binding: the DPoP key and client certificate the request proved possession of, if any
    ///     (a bearer answer keeps only the certificate).
    ///   - field: where the token is (`id_token` for a Google ID token).
    public static func parse(_ response: TokenHTTPResponse, defaultLifetime: Duration,
                             wallClock: Double, binding: TokenBinding? = nil,
                             field: TokenEndpointRequest.TokenField = .accessToken) -> Result<TokenGrant, TokenFetchError> {
        parseUnbound(response, defaultLifetime: defaultLifetime, wallClock: wallClock, dpop: binding?.dpopKey != nil,
                     field: field).map { grant, dpop in
            var grant = grant
            grant.binding = dpop ? binding : binding?.withoutDPoP
            return grant
        }
    }

    /// The refresh token a 200 answer rotated to (RFC 6749 §6), nil when it has none or none
    /// that could be sent (empty, not a string, spaces or controls). Read apart from the access
    /// token: a rotation must be kept even when the rest of the answer is unusable.
    public static func rotatedRefreshToken(_ response: TokenHTTPResponse) -> String? {
        guard response.status == 200, case .string(let token)? = TokenResponseBody.decode(response.body)?.refreshToken,
              !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return token
    }

    private static func parseUnbound(_ response: TokenHTTPResponse, defaultLifetime: Duration, wallClock: Double,
                                     dpop: Bool, field: TokenEndpointRequest.TokenField) -> Result<(TokenGrant, Bool), TokenFetchError> {
        guard response.status == 200 else { return .failure(error(for: response, wallClock: wallClock)) }
        if field == .awsCredentials { return awsCredentials(response, wallClock: wallClock).map { ($0, false) } }
        guard let body = TokenResponseBody.decode(response.body) else {
            return .failure(TokenFetchError(.invalidResponse("the body is not a JSON object")))
        }
        let value: String
        let name = field.rawValue
        switch field == .idToken ? body.idToken : body.accessToken {
        case .absent: return .failure(TokenFetchError(.invalidResponse("\(name) missing")))
        case .wrongType: return .failure(TokenFetchError(.invalidResponse("\(name) is not a string")))
        case .string(let text): value = text
        }
        guard !value.isEmpty else { return .failure(TokenFetchError(.invalidResponse("\(name) is empty"))) }
        guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(TokenFetchError(.invalidResponse("\(name) contains spaces, control or non-ASCII characters")))
        }
        var bound = false
        switch body.tokenType {
        case .absent: break
        case .wrongType: return .failure(TokenFetchError(.invalidResponse("token_type is not a string")))
        case .string(let type):
            // RFC 8693 §2.2.1: "N_A" for an exchanged token that is not an access token.
            // RFC 9449 §5: "DPoP" for a token bound to the proof's key (asked for only with one).
            bound = dpop && type.lowercased() == "dpop"
            guard bound || type.lowercased() == "bearer" || type.lowercased() == "n_a" else {
                return .failure(TokenFetchError(.invalidResponse("token_type is \"\(LogSafeText.code(type))\", not Bearer")))
            }
        }
        switch body.expiresIn {
        case .seconds(let seconds):
            guard seconds.isFinite, seconds > 0 else {
                return .failure(TokenFetchError(.invalidResponse("expires_in is not a positive number")))
            }
            return .success((TokenGrant(value: value, lifetime: clamp(seconds), lifetimeSource: .expiresIn), bound))
        case .invalid:
            return .failure(TokenFetchError(.invalidResponse("expires_in is not a number")))
        case .absent:
            break
        }
        if let exp = JWTExpiry.expiry(of: value) {
            let seconds = exp - wallClock
            guard seconds > 0 else {
                return .failure(TokenFetchError(.invalidResponse("the JWT's exp is in the past (check the clock)")))
            }
            return .success((TokenGrant(value: value, lifetime: clamp(seconds), lifetimeSource: .jwtExpiry), bound))
        }
        return .success((TokenGrant(value: value, lifetime: defaultLifetime, lifetimeSource: .defaultLifetime), bound))
    }

    /// AWS credentials (``AWSCredentialsAnswer``), usable until their `Expiration`.
    private static func awsCredentials(_ response: TokenHTTPResponse, wallClock: Double) -> Result<TokenGrant, TokenFetchError> {
        switch AWSCredentialsAnswer.parse(response.body) {
        case .failure(let problem):
            return .failure(TokenFetchError(.invalidResponse(problem.description)))
        case .success(let answer):
            let seconds = answer.expiration - wallClock
            guard seconds > 0 else { return .failure(TokenFetchError(.invalidResponse("the credentials' Expiration is in the past (check the clock)"))) }
            return .success(TokenGrant(value: answer.credentials.tokenValue, lifetime: clamp(seconds), lifetimeSource: .expiresIn))
        }
    }

    private static func clamp(_ seconds: Double) -> Duration {
        let maxSeconds = Double(maxLifetime.components.seconds)
        return seconds >= maxSeconds ? maxLifetime : .milliseconds(Int64((seconds * 1000).rounded()))
    }

    private static func error(for response: TokenHTTPResponse, wallClock: Double) -> TokenFetchError {
        let status = response.status
        var retryAfter: Duration?
        if status == 429 || status >= 500, let header = response.fields.first("Retry-After") {
            retryAfter = RetryAfter.parse(header, wallClock: wallClock)
        }
        if let body = TokenResponseBody.decode(response.body), case .string(let rawCode) = body.error {
            let code = LogSafeText.code(rawCode)
            if !code.isEmpty {
                var description: String?
                if case .string(let text) = body.errorDescription, !text.isEmpty { description = LogSafeText.sentence(text) }
                return TokenFetchError(.oauthError(status: status, code: code, description: description), retryAfter: retryAfter)
            }
        }
        if let code = AWSCredentialsAnswer.errorCode(response.body) {
            return TokenFetchError(.oauthError(status: status, code: LogSafeText.code(code), description: nil), retryAfter: retryAfter)
        }
        return TokenFetchError(.httpStatus(status), retryAfter: retryAfter)
    }
}
