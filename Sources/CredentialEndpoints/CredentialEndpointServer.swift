import EventLoop
import HTTPMessage
import Logging
import Proxy
import Synchronization
import TokenManager

/// The `credentialEndpoints:` listener: each request decided by a ``CredentialEndpointRouter``
/// (replaced when a reload changes the endpoints or their credentials); a grant asks `grants` for
/// the credential's placeholder (or token) and its expiry, and is answered as the endpoint words
/// it — 503 while the credential has no token, worded as that service words its errors. Every
/// request is counted (endpoint, credential, status) and logged without a value.
///
/// Threading: as for ``LocalServer`` — create it on its loop's thread or before that loop runs,
/// close it on that thread; `grants` is called on the loop and may complete on any thread.
public final class CredentialEndpointServer: LoopServer {
    /// What `grants` found for an endpoint's credential.
    public enum GrantOutcome: Sendable {
        /// What to hand out.
        case granted(EndpointGrant)
        /// Nothing to hand out now, and why (no value in it): answered 503.
        case unavailable(String)
    }

    /// Looks up what to hand out for an endpoint's credential.
    public typealias GrantSource = (ServedEndpoint, @escaping @Sendable (GrantOutcome) -> Void) -> Void

    /// A count's key: which endpoint, which credential (empty when none was named), what status.
    public struct CountKey: Hashable, Sendable {
        /// `mca`, `oauth2`, `gce`, `azure`, `aws`, or `unknown` for a path no endpoint serves.
        public let endpoint: String
        /// The credential the endpoint serves.
        public let credential: String
        /// The answer's status.
        public let status: Int
    }

    /// The router and the counts, shared with the responder.
    private final class State: Sendable {
        let router: Mutex<CredentialEndpointRouter>
        let counts = Mutex<[CountKey: UInt64]>([:])

        init(_ router: CredentialEndpointRouter) {
            self.router = Mutex(router)
        }
    }

    private let server: LocalServer
    private let state: State

    /// Binds `address` on `loop`, deciding with `router`, granting through `grants`.
    public init(address: SocketAddress, loop: EventLoop, router: CredentialEndpointRouter, grants: @escaping GrantSource,
                logger: Logger) throws(EventLoopError) {
        let state = State(router)
        self.state = state
        server = try LocalServer(address: address, on: loop) { request, respond in
            let bound = LoopBound(respond, on: loop)
            let router = state.router.withLock { $0 }
            let served = router.endpoint(forPath: request.path)
            let endpoint = served?.config.kind.rawValue ?? "unknown", credential = served?.config.credential ?? ""
            let finish: @Sendable (LocalResponse) -> Void = { response in
                state.counts.withLock { $0[CountKey(endpoint: endpoint, credential: credential, status: response.status), default: 0] += 1 }
                logger.info("credential endpoint", metadata: [
                    "endpoint": .string(endpoint), "credential": .string(credential), "method": .string(request.method),
                    "path": .string(request.path), "status": .stringConvertible(response.status),
                ])
                bound.run { respond in respond(response) }
            }
            switch router.decide(request, for: served) {
            case .answer(let response):
                finish(response)
            case .grant(let served, let format):
                grants(served) { outcome in
                    switch outcome {
                    case .granted(let grant):
                        finish(CredentialEndpointRouter.answer(format, grant, now: SystemTokenClock().wallClockSeconds))
                    case .unavailable(let why):
                        finish(CredentialEndpointRouter.refusal(served.config.kind, status: 503, code: "temporarily_unavailable", why,
                                                                headers: [("Retry-After", "1")]))
                    }
                }
            }
        }
    }

    /// Decides from now on with `router` (a reload changed the endpoints or their credentials).
    public func replace(router: CredentialEndpointRouter) {
        state.router.withLock { $0 = router }
    }

    /// Every request counted so far.
    public func requestCounts() -> [CountKey: UInt64] {
        state.counts.withLock { $0 }
    }

    /// The address actually bound (the real port when 0 was asked for).
    public var address: SocketAddress { server.address }

    /// Stops listening and closes every connection.
    public func close() { server.close() }
}
