import JSON
import Admin
import EventLoop
import HTTPMessage
import Proxy

/// A demo protected backend for `token-sidecar demo`: accepts any method and path with a
/// valid, unexpired `Authorization: Bearer <token>` issued by ``DemoIssuer`` and echoes the
/// request as JSON, showing only the token's first 8 characters.
///
/// Without credentials it answers 401 with `WWW-Authenticate: Bearer realm="token-sidecar-demo"`;
/// with an unknown or expired token, 401 with `error="invalid_token"` added (RFC 6750 §3.1:
/// a request with no credentials gets no error code).
public final class DemoBackend: LoopServer {
    private let server: LocalServer

    /// Binds `address` on `loop`, accepting tokens found in `registry`. Threading as for
    /// ``LocalServer``.
    public init(address: SocketAddress, loop: EventLoop, registry: DemoTokenRegistry) throws(EventLoopError) {
        server = try LocalServer(address: address, on: loop) { request, respond in
            respond(DemoBackend.handle(request, registry: registry))
        }
    }

    /// The address actually bound.
    public var address: SocketAddress { server.address }

    /// Stops listening and closes every connection.
    public func close() { server.close() }

    private static let realm = "Bearer realm=\"token-sidecar-demo\""

    /// The backend's answer to one request.
    static func handle(_ request: LocalRequest, registry: DemoTokenRegistry) -> LocalResponse {
        guard let authorization = request.fields.first("Authorization") else {
            return .error(status: 401, "missing bearer token", headers: [("WWW-Authenticate", realm)])
        }
        guard let token = bearerToken(authorization), registry.isValid(token) else {
            return .error(status: 401, "invalid or expired token",
                          headers: [("WWW-Authenticate", realm + ", error=\"invalid_token\"")])
        }
        let shown = "Bearer " + redacted(token)
        let headers: [JSONValue] = request.fields.map { field in
            let lowered = field.name.lowercased()
            let value = lowered == "authorization" ? shown : lowered == "proxy-authorization" ? "…" : field.value
            return .array([.string(field.name), .string(value)])
        }
        return .json(.object([
            ("ok", .bool(true)),
            ("method", .string(request.method)),
            ("path", .string(request.path)),
            ("query", .array(request.query.map { .array([.string($0.name), .string($0.value)]) })),
            ("headers", .array(headers)),
            ("bodyBytes", .int(request.body.count)),
            ("token", .string(redacted(token))),
        ]), headers: [("Cache-Control", "no-store")])
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1), or nil.
    static func bearerToken(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingSpaces
        return token.isEmpty || token.contains(" ") ? nil : token
    }

    /// The first 8 characters and an ellipsis: enough to see a token was injected, not enough to use it.
    static func redacted(_ token: String) -> String {
        String(token.prefix(8)) + "…"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
