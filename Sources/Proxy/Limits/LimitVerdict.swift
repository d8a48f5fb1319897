/// What a limit decided for one request.
enum LimitVerdict: Equatable {
    /// Which limit refused a request (its audit record's `reason`).
    enum Kind: String, Equatable {
        /// The token bucket was empty.
        case rate = "rate_limit"
        /// The period's budget was spent.
        case budget = "budget_exhausted"
    }

    /// Within every limit.
    case admitted
    /// Over a limit: whose (`route api.test:443`, `credential partner`), which, and the whole
    /// seconds after which asking again may succeed (`Retry-After`).
    case refused(scope: String, kind: Kind, retryAfter: Int)

    /// The answer to a refused request: 429 with `Retry-After` (gRPC: RESOURCE_EXHAUSTED).
    var error: ProxyError? {
        guard case .refused(let scope, let kind, let retryAfter) = self else { return nil }
        let what = kind == .rate ? "rate limit reached" : "budget spent for this period"
        return ProxyError(status: 429, type: "http_request_denied", message: "\(scope): \(what); retry in \(retryAfter) s",
                          retryAfter: retryAfter)
    }
}
