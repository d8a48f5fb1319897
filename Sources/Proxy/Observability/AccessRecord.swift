/// One access-log record: what the proxy answered to one request. Never a token or a query
/// string: the token only by fingerprint, the path without its query.
public struct AccessRecord: Sendable {
    /// The request method.
    public let method: String
    /// The destination (`host[:port]`), or `-`.
    public let authority: String
    /// The request path without its query string.
    public let path: String
    /// The status sent to the client.
    public let status: Int
    /// Request body bytes relayed.
    public let bytesIn: Int
    /// Response body bytes relayed.
    public let bytesOut: Int
    /// Milliseconds from the complete request head to the end of the response.
    public let durationMs: Int
    /// The route's label, or `unrouted`.
    public let route: String
    /// `host:port` of the backend, when one was chosen.
    public let upstream: String?
    /// The injected token's fingerprint, when one was injected.
    public let tokenFingerprint: String?
    /// Whether a token was injected, the client's own `Authorization` kept, or neither.
    public let auth: AuthorizationUse
    /// The Proxy-Status error type, when the proxy answered with an error.
    public let proxyStatus: String?
    /// The worker that served the request.
    public let worker: Int
    /// The scopes the request asked for (a route's `scopeHeader`), sorted, if any.
    public var scope: String? = nil
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2` (a stream of an app's HTTP/2 connection).
    public var protocolName: String = "HTTP/1.1"
    /// Where the injected token went (`header:authorization`, `header:x-api-key`, `query:key`,
    /// `basic`, `placeholder`), when one was injected. Never a value.
    public var placement: String? = nil
}

/// Writes access records (set on ``ProxyServer/accessLogWriter`` before it starts). Without
/// one, access lines go through the proxy's `Logger` as `access` messages with metadata.
///
/// Called on worker threads, once per request: implementations format without going through
/// a metadata dictionary and must not block.
public protocol AccessLogWriter: Sendable {
    /// Writes one record.
    func write(_ record: AccessRecord)
}
