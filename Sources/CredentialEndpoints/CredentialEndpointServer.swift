import EventLoop
import Glibc
import HTTPMessage
import Logging
import Proxy
import Synchronization

/// The `credentialEndpoints:` listener: each request decided by a ``CredentialEndpointRouter``;
/// a grant asks `grants` for the credential's placeholder (or token) and its expiry, and is
/// answered as the endpoint words it — 503 while the credential has no token. Every request is
/// counted (endpoint, credential, status) and logged without a value.
///
/// Threading: as for ``LocalServer`` — create it on its loop's thread or before that loop runs,
/// close it on that thread; `grants` is called on the loop and may complete on any thread.
public final class CredentialEndpointServer: LoopServer {
    /// Looks up what to hand out for an endpoint's credential; nil when it has no token (yet).
    public typealias GrantSource = (ServedEndpoint, @escaping @Sendable (EndpointGrant?) -> Void) -> Void

    /// A count's key: which endpoint, which credential (empty when none was named), what status.
    public struct CountKey: Hashable, Sendable {
        /// `mca`, `oauth2`, `gce`, `azure`, `aws`, or `unknown` for a path no endpoint serves.
        public let endpoint: String
        /// The credential the endpoint serves.
        public let credential: String
        /// The answer's status.
        public let status: Int
    }

    /// The counts, shared with the responder.
    private final class Counts: Sendable {
        let state = Mutex<[CountKey: UInt64]>([:])
    }

    private let server: LocalServer
    private let counts: Counts

    /// Binds `address` on `loop`, deciding with `router`, granting through `grants`.
    public init(address: SocketAddress, loop: EventLoop, router: CredentialEndpointRouter, grants: @escaping GrantSource,
                logger: Logger) throws(EventLoopError) {
        let counts = Counts()
        self.counts = counts
        server = try LocalServer(address: address, on: loop) { request, respond in
            let bound = LoopBound(respond, on: loop)
            let finish: @Sendable (String, String, LocalResponse) -> Void = { endpoint, credential, response in
                counts.state.withLock { $0[CountKey(endpoint: endpoint, credential: credential, status: response.status), default: 0] += 1 }
                logger.info("credential endpoint", metadata: [
                    "endpoint": .string(endpoint), "credential": .string(credential), "method": .string(request.method),
                    "path": .string(request.path), "status": .stringConvertible(response.status),
                ])
                bound.run { respond in respond(response) }
            }
            let served = router.endpoint(forPath: request.path)
            switch router.decide(request) {
            case .answer(let response):
                finish(served?.config.kind.rawValue ?? "unknown", served?.config.credential ?? "", response)
            case .grant(let endpoint, let format):
                grants(endpoint) { grant in
                    var now = timespec()
                    clock_gettime(CLOCK_REALTIME, &now)
                    let response = grant.map { CredentialEndpointRouter.answer(format, $0, now: Double(now.tv_sec)) }
                        ?? .error(status: 503, "credential \(endpoint.config.credential) has no token yet; retry shortly",
                                  headers: [("Retry-After", "1")])
                    finish(endpoint.config.kind.rawValue, endpoint.config.credential, response)
                }
            }
        }
    }

    /// Every request counted so far.
    public func requestCounts() -> [CountKey: UInt64] {
        counts.state.withLock { $0 }
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var address: SocketAddress { server.address }

    /// Stops listening and closes every connection.
    public func close() { server.close() }
}
