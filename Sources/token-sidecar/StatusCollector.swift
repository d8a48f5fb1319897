import Admin
import Config
import EventLoop
import Proxy
import TokenManager

/// Gathers the status page's report from a running sidecar: its configuration (credentials,
/// routes), each credential's status and the proxy's merged counters. Keeps the previous
/// request total to turn counters into a rate. Used on the sidecar's control loop.
final class StatusCollector: Sendable {
    private let startedAt = ContinuousClock.now
    private let previous = Locked<(requests: Int, at: ContinuousClock.Instant)?>(nil)

    /// The report for `sidecar`, given the proxy's merged counters.
    func report(config: SidecarConfig, credentials: CredentialSet, proxy: ProxyMetrics) -> StatusReport {
        let now = ContinuousClock.now
        let clock = WallClockConverter()
        let requests = Int(proxy.requests.values.reduce(0, +))
        let (since, before) = previous.withLock { last -> (ContinuousClock.Instant, Int) in
            let value = last ?? (0, startedAt)
            last = (requests, now)
            return (value.at, value.requests)
        }
        let elapsed = StatusCollector.seconds(now - since)
        let rate = elapsed > 0 ? Double(requests - before) / elapsed : 0

        let rows = config.credentials.map { configured -> StatusReport.Credential in
            let kind = StatusCollector.kind(configured.kind)
            let unauthorized = Int(proxy.upstreamUnauthorized[configured.name] ?? 0)
            guard let credential = credentials[configured.name] else {
                return StatusReport.Credential(name: configured.name, kind: kind, state: "unknown", unauthorized: unauthorized)
            }
            guard let managed = credential as? ManagedCredential else {
                return StatusReport.Credential(name: configured.name, kind: kind, state: "static",
                                               fingerprint: credential.currentToken()?.fingerprint, unauthorized: unauthorized)
            }
            let status = managed.status
            return StatusReport.Credential(
                name: configured.name, kind: kind, state: status.phase.rawValue, fingerprint: status.fingerprint,
                expiresInSeconds: status.expiresAt.map { Int(StatusCollector.seconds($0 - now).rounded(.down)) },
                lastFetch: clock.time(at: status.issuedAt), lastError: status.lastError,
                fetches: status.counts.succeeded, failures: status.counts.failedTotal, unauthorized: unauthorized,
                sharedCache: status.sharedCache.map {
                    SharedCacheReport(available: $0.available, hits: $0.counts.hits, misses: $0.counts.misses,
                                      leasesWon: $0.counts.leaseWon, leasesWaited: $0.counts.leaseWaited,
                                      fallbacks: $0.counts.fallbacks, errors: $0.counts.errors)
                }, binding: StatusCollector.binding(status))
        }
        // Tokens fetched per request (a caller's exchanged token, a scope set): the most recently
        // used of each route, by variant (a subject only by its fingerprint), and a count of the rest.
        var perRequest: [StatusReport.Credential] = []
        for (route, variants) in credentials.allVariants {
            let held = variants.credentials
            for managed in held.prefix(Self.variantRows) {
                let status = managed.status
                perRequest.append(StatusReport.Credential(
                    name: "\(status.name) [\(status.variant ?? "default")]", kind: "per request (\(route))", state: status.phase.rawValue,
                    fingerprint: status.fingerprint,
                    expiresInSeconds: status.expiresAt.map { Int(StatusCollector.seconds($0 - now).rounded(.down)) },
                    lastFetch: clock.time(at: status.issuedAt), lastError: status.lastError,
                    fetches: status.counts.succeeded, failures: status.counts.failedTotal, unauthorized: 0,
                    binding: StatusCollector.binding(status)))
            }
            if held.count > Self.variantRows {
                perRequest.append(StatusReport.Credential(name: "\(variants.name) [\(held.count - Self.variantRows) more]",
                                                          kind: "per request (\(route))", state: "held", unauthorized: 0))
            }
        }
        let routes = config.routes.map { route in
            StatusReport.Route(host: route.host.description, upstream: route.upstream?.description ?? "the requested host",
                               credential: route.credential, clientAuthorization: route.clientAuthorization.rawValue)
        }
        var pools: [String: StatusReport.Pool] = [:]
        for (key, count) in proxy.upstreamConnections {
            var pool = pools[key.upstream] ?? StatusReport.Pool(upstream: key.upstream, idle: 0, leased: 0, connecting: 0)
            switch key.state {
            case "idle": pool.idle += count
            case "connecting": pool.connecting += count
            default: pool.leased += count
            }
            pools[key.upstream] = pool
        }
        return StatusReport(
            generatedAt: WallClockTime(secondsSince1970: clock.wall), uptimeSeconds: Int(StatusCollector.seconds(now - startedAt)),
            credentials: rows + perRequest, routes: routes, pools: pools.keys.sorted().compactMap { pools[$0] },
            requests: requests, requestsPerSecond: rate, clientConnections: proxy.clientConnections,
            errors: proxy.upstreamErrors.sorted { $0.key < $1.key }.map { (type: $0.key, count: Int($0.value)) })
    }

    /// The most tokens fetched per request listed for each route.
    static let variantRows = 20

    /// `static`, `oauth2 (private_key_jwt)`, `mca (certificate)`.
    /// How the current token is presented, nil before the first token.
    static func binding(_ status: TokenStatus) -> TokenBindingReport? {
        status.tokenType.map {
            TokenBindingReport(tokenType: $0, jkt: status.dpopThumbprint, certificateThumbprint: status.certificateThumbprint)
        }
    }

    static func kind(_ kind: CredentialKind) -> String {
        switch kind {
        case .staticToken: return "static"
        case .oauth2(let oauth): return "oauth2 (\(oauthAuthName(oauth.auth)))"
        case .mca(let mca): return "mca (\(mca.auth.rawValue))"
        case .aws: return "aws (sigv4)"
        case .googleServiceAccount(let google): return google.targetAudience == nil ? "google_service_account" : "google_service_account (id_token)"
        }
    }

    private static func oauthAuthName(_ auth: ClientAuthMethod) -> String {
        switch auth {
        case .basic: return "client_secret_basic"
        case .post: return "client_secret_post"
        default: return auth.rawValue
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (s, atto) = duration.components
        return Double(s) + Double(atto) / 1e18
    }
}
