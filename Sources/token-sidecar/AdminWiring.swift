import Admin
import Config
import EventLoop
import Proxy
import TokenManager

/// Connects the admin listener (`/` status page, `/healthz`, `/readyz`, `/metrics`, `/tokens`) to a running
/// sidecar. It runs on the sidecar's control loop (main thread).
enum AdminWiring {
    /// Binds the admin listener and logs its address; a failure to bind is logged, not fatal.
    static func start(for sidecar: Sidecar) {
        let box = SidecarBox(sidecar)
        let collector = StatusCollector()
        let provider = AdminProvider(
            isServing: { !box.sidecar.isDraining },
            readiness: { completion in completion(readiness(box.sidecar)) },
            metrics: { completion in
                let statuses = managed(box.sidecar).map(\.status)
                let variants = box.sidecar.runtime.credentials.allVariants
                let tracing = box.sidecar.tracing?.exporter.snapshot
                let limits = box.sidecar.server.limiters.statuses()
                let configuration = box.sidecar.reloads.report
                let endpoints = box.sidecar.credentialEndpoints?.requestCounts()
                box.sidecar.server.collectMetrics { proxy in
                    completion(MetricsExporter.families(proxy: proxy, tokens: statuses, wallClock: WallClockConverter(),
                                                        variants: variants, tracing: tracing, limits: limits,
                                                        configuration: configuration, credentialEndpoints: endpoints))
                }
            },
            tokens: { completion in completion(tokenReports(box.sidecar)) },
            status: { completion in
                let sidecar = box.sidecar
                let config = sidecar.config, credentials = sidecar.runtime.credentials
                let tracing = sidecar.tracing.map(tracingReport) ?? .off
                let limits = sidecar.server.limiters.statuses().map(limitReport)
                let configuration = sidecar.reloads.report
                sidecar.server.collectMetrics { proxy in
                    var report = collector.report(config: config, credentials: credentials, proxy: proxy)
                    report.tracing = tracing
                    report.limits = limits
                    report.configuration = configuration
                    completion(report)
                }
            },
            reload: { completion in
                let applied = box.sidecar.reload("POST /reload")
                completion((applied, box.sidecar.reloads.report))
            }
        )
        do {
            let address = try SocketAddress(host: sidecar.config.admin.host, port: sidecar.config.admin.port)
            let server = try AdminServer(address: address, loop: sidecar.control, provider: provider)
            sidecar.admin = server
            sidecar.logger.info("admin listening", metadata: ["address": "\(server.address)"])
        } catch {
            sidecar.logger.error("cannot start the admin listener", metadata: ["error": "\(error)"])
        }
    }

    /// The status page's tracing section (the endpoint, never a header).
    static func tracingReport(_ tracing: TracingSetup) -> TracingReport {
        let counts = tracing.exporter.snapshot
        let sampler = tracing.config.sampler
        return TracingReport(enabled: true, endpoint: tracing.exporter.settings.endpoint.description,
                             sampler: sampler.usesRatio ? "\(sampler.rawValue) \(tracing.config.samplerArg)" : sampler.rawValue,
                             exported: counts.exported, droppedQueueFull: counts.droppedQueueFull,
                             droppedExportFailed: counts.droppedExportFailed, queued: counts.queued)
    }

    /// The status page's row of one limit.
    static func limitReport(_ status: LimitStatus) -> StatusReport.Limit {
        StatusReport.Limit(
            scope: status.scope,
            rate: status.config.rate.map { "\($0.perSecondText)/s, burst \($0.burst)\(sharing(status.rateShared))" },
            tokens: status.rateTokens.map { Int($0.rounded(.down)) },
            budget: status.config.budget.map { budget in
                "\(budget.requests)/\(budget.per.rawValue)\(sharing(status.budgetShared))"
            },
            remaining: status.budgetRemaining, resetsInSeconds: status.budgetResetsIn,
            refused: Int(status.refusedRate + status.refusedBudget))
    }

    /// `, fleet` for a limit the fleet shares, or that its store is unavailable; nothing when not shared.
    private static func sharing(_ shared: Bool?) -> String {
        shared.map { $0 ? ", fleet" : ", fleet store unavailable: kept locally" } ?? ""
    }

    private static func managed(_ sidecar: Sidecar) -> [ManagedCredential] {
        sidecar.runtime.credentials.all.compactMap { $0 as? ManagedCredential }
    }

    /// Ready when the proxy listens and every credential has a usable token.
    static func readiness(_ sidecar: Sidecar) -> Readiness {
        var missing: [String] = []
        if sidecar.isDraining { missing.append("shutting down") }
        if let endpoints = CredentialEndpointsWiring.notListening(sidecar) { missing.append(endpoints) }
        let credentials = sidecar.runtime.credentials
        for credential in credentials.all where !credentials.perRequestOnly.contains(credential.name) && credential.currentToken() == nil {
            var line = "credential \(credential.name): no valid token"
            if let managed = credential as? ManagedCredential, let error = managed.status.lastError {
                line += " (last error: \(error))"
            }
            missing.append(line)
        }
        return Readiness(ready: missing.isEmpty, missing: missing)
    }

    /// Status per credential, then per token fetched per request (by variant: scopes, audience,
    /// the subject's fingerprint) — never a token.
    static func tokenReports(_ sidecar: Sidecar) -> [TokenReport] {
        let clock = WallClockConverter()
        let credentials = sidecar.runtime.credentials
        let own = credentials.all.map { credential in
            guard let managed = credential as? ManagedCredential else {
                return TokenReport(name: credential.name, state: "static",
                                   fingerprint: credential.currentToken()?.fingerprint, fetchCounts: [:])
            }
            let status = managed.status
            var counts = status.counts.failed
            counts["success"] = status.counts.succeeded
            return report(managed.status, clock)
        }
        let perRequest = credentials.allVariants.flatMap { route, variants in
            variants.credentials.map { credential -> TokenReport in
                var report = report(credential.status, clock)
                report.route = route
                return report
            }
        }
        return own + perRequest
    }

    private static func report(_ status: TokenStatus, _ clock: WallClockConverter) -> TokenReport {
        var counts = status.counts.failed
        counts["success"] = status.counts.succeeded
        var report = TokenReport(name: status.name, state: status.phase.rawValue, fingerprint: status.fingerprint,
                                 issuedAt: clock.time(at: status.issuedAt), expiresAt: clock.time(at: status.expiresAt),
                                 nextRefresh: clock.time(at: status.nextFetchAt), lastError: status.lastError,
                                 fetchCounts: counts)
        report.variant = status.variant
        report.binding = StatusCollector.binding(status)
        return report
    }
}

/// Lets the admin closures reach the sidecar; they all run on its control loop.
private final class SidecarBox: @unchecked Sendable {
    let sidecar: Sidecar
    init(_ sidecar: Sidecar) { self.sidecar = sidecar }
}
