/// An error the proxy itself answers with (as opposed to a response relayed from a backend).
///
/// Each has an RFC 9209 error type, sent in `Proxy-Status` and in the JSON body.
public struct ProxyError: Error, Sendable, Equatable {
    /// HTTP status of the generated response.
    public let status: Int
    /// RFC 9209 error type, e.g. `http_request_denied`.
    public let type: String
    /// A sentence for a person. Never contains secrets or header values.
    public let message: String
    /// The `WWW-Authenticate` challenge of a 401 (RFC 6750 §3), if any.
    public var challenge: String? { extra?.challenge }
    /// More keys of the JSON body (an OAuth error code, a refused scope), if any.
    public var details: [String: String] { extra?.details ?? [:] }
    /// Seconds for a `Retry-After` field, if any.
    public var retryAfter: Int? { extra?.retryAfter }
    /// The rarely used parts behind one reference: a routing result carries a `ProxyError`.
    private let extra: Extra?

    private final class Extra: Sendable, Equatable {
        let challenge: String?
        let details: [String: String]
        let retryAfter: Int?
        init(challenge: String?, details: [String: String], retryAfter: Int?) {
            self.challenge = challenge
            self.details = details
            self.retryAfter = retryAfter
        }
        static func == (lhs: Extra, rhs: Extra) -> Bool {
            lhs.challenge == rhs.challenge && lhs.details == rhs.details && lhs.retryAfter == rhs.retryAfter
        }
    }

    /// Creates an error response description.
    public init(status: Int, type: String, message: String, challenge: String? = nil, details: [String: String] = [:],
                retryAfter: Int? = nil) {
        self.status = status
        self.type = type
        self.message = message
        extra = challenge == nil && details.isEmpty && retryAfter == nil
            ? nil : Extra(challenge: challenge, details: details, retryAfter: retryAfter)
    }

    static func badRequest(_ message: String) -> ProxyError {
        ProxyError(status: 400, type: "http_request_error", message: message)
    }

    static func headTooLarge(_ message: String) -> ProxyError {
        ProxyError(status: 431, type: "http_request_error", message: message)
    }

    static func denied(_ message: String) -> ProxyError {
        ProxyError(status: 403, type: "http_request_denied", message: message)
    }

    static func connectNotAllowed() -> ProxyError {
        ProxyError(status: 405, type: "http_request_denied",
                   message: "CONNECT is not supported: send plain http:// URLs through token-sidecar; it originates TLS to the backend itself")
    }

    static func connectDenied(_ message: String) -> ProxyError {
        ProxyError(status: 403, type: "http_request_denied", message: message)
    }

    /// RFC 9110 §15.5.20: a request inside an intercepted tunnel for another destination.
    static func misdirected(_ origin: InterceptedOrigin, _ requested: String) -> ProxyError {
        ProxyError(status: 421, type: "http_request_denied",
                   message: "this connection is for \(origin.description); the request is for \(requested): open a tunnel to that host")
    }

    static func upstreamProtocol(_ message: String) -> ProxyError {
        ProxyError(status: 502, type: "http_protocol_error", message: message)
    }

    static func tokenUnavailable(_ credential: String) -> ProxyError {
        ProxyError(status: 503, type: "proxy_internal_error",
                   message: "no valid token is available for credential '\(credential)' yet; retry shortly")
    }
}
