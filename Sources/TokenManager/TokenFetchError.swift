/// Why a token fetch did not produce a token, classified for retry and logging.
///
/// Messages never contain the token, the client secret or the response body; an OAuth error
/// code and a sanitised, truncated `error_description` are included.
public struct TokenFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// No complete HTTP response.
        case transport(TokenTransportError)
        /// A non-200 status with an OAuth error body (`error`, `error_description`).
        case oauthError(status: Int, code: String, description: String?)
        /// A non-200 status without a usable OAuth error body.
        case httpStatus(Int)
        /// A 200 response without a usable token; the message says what was wrong.
        case invalidResponse(String)
        /// The request could not be authenticated before sending: a signing key, certificate or
        /// assertion file is missing, unreadable, invalid or expired. Nothing was sent; the
        /// message names the file.
        case clientAuthentication(String)
    }

    /// What went wrong.
    public let kind: Kind
    /// The server's `Retry-After` (429 and 5xx only), uncapped.
    public let retryAfter: Duration?
    /// The grant itself was refused for good: `invalid_grant` to a refresh token (revoked,
    /// expired or already spent) — only a new one in the file helps, so it counts as rejected
    /// credentials (retried at the backoff cap, never in a storm).
    public var grantRefused = false

    /// Creates an error.
    public init(_ kind: Kind, retryAfter: Duration? = nil) {
        self.kind = kind
        self.retryAfter = retryAfter
    }

    /// The OAuth error codes that mean the configured client credentials or scope are wrong.
    public static let rejectingErrorCodes: Set<String> = ["invalid_client", "unauthorized_client", "invalid_scope"]

    /// True when the server rejected the credentials (HTTP 401, or `invalid_client`,
    /// `unauthorized_client`, `invalid_scope`): retrying soon will not help, a person must act.
    public var isCredentialsRejected: Bool {
        switch kind {
        case .oauthError(let status, let code, _):
            return grantRefused || status == 401 || TokenFetchError.rejectingErrorCodes.contains(code)
        case .httpStatus(let status):
            return status == 401
        case .transport, .invalidResponse, .clientAuthentication:
            return false
        }
    }

    /// The OAuth error codes with which a token server refuses what a request asked for rather
    /// than who asked: the audience or resource (`invalid_target`), the scope (`invalid_scope`),
    /// the grant (`invalid_grant`). For a token fetched per scope set the proxy answers 403.
    public static let refusalCodes: Set<String> = ["invalid_grant", "invalid_target", "invalid_scope"]

    /// ``refusalCodes`` and, for a caller's token exchange, `invalid_request`: what RFC 8693
    /// §2.2.2 answers to a subject or actor token that is invalid or unacceptable.
    public static let exchangeRefusalCodes: Set<String> = refusalCodes.union(["invalid_request", "invalid_token"])

    /// The OAuth error code when it is one of ``refusalCodes``.
    public var refusalCode: String? {
        guard case .oauthError(_, let code, _) = kind, TokenFetchError.refusalCodes.contains(code) else { return nil }
        return code
    }

    /// The same error without the server's `error_description` (it may quote a caller's token).
    public var withoutDescription: TokenFetchError {
        guard case .oauthError(let status, let code, .some) = kind else { return self }
        return TokenFetchError(.oauthError(status: status, code: code, description: nil), retryAfter: retryAfter)
    }

    /// A short label for counters: `credentials_rejected`, `network`, `timeout`, `http_429`,
    /// `http_5xx`, `http_other`, `invalid_response`, `client_authentication`.
    public var counterName: String {
        if isCredentialsRejected { return "credentials_rejected" }
        switch kind {
        case .transport(.timeout): return "timeout"
        case .transport(.malformedResponse), .transport(.bodyTooLarge): return "invalid_response"
        case .transport: return "network"
        case .oauthError(let status, _, _), .httpStatus(let status):
            if status == 429 { return "http_429" }
            return status >= 500 ? "http_5xx" : "http_other"
        case .invalidResponse: return "invalid_response"
        case .clientAuthentication: return "client_authentication"
        }
    }

    /// A message for logs and people.
    public var description: String {
        let text: String
        switch kind {
        case .transport(let error):
            text = error.description
        case .oauthError(let status, let code, let description):
            text = "token endpoint answered HTTP \(status) \(code)" + (description.map { ": \($0)" } ?? "")
        case .httpStatus(let status):
            text = "token endpoint answered HTTP \(status)"
        case .invalidResponse(let why):
            text = "token endpoint answered 200 without a usable token: \(why)"
        case .clientAuthentication(let why):
            text = "cannot authenticate to the token endpoint: \(why)"
        }
        if let retryAfter { return text + " (Retry-After \(retryAfter))" }
        return text
    }
}
