import Admin
import CredentialEndpoints
import Proxy
import TokenManager
import TraceExport

/// Turns the proxy's and the token manager's numbers into Prometheus metric families.
enum MetricsExporter {
    static func families(proxy: ProxyMetrics, tokens: [TokenStatus], wallClock: WallClockConverter,
                         variants: [(route: String, variants: TokenVariants)] = [], tracing: ExportCounts? = nil,
                         limits: [LimitStatus] = [], configuration: ConfigurationReport? = nil,
                         credentialEndpoints: [CredentialEndpointServer.CountKey: UInt64]? = nil) -> [MetricFamily] {
        var families: [MetricFamily] = []
        if let credentialEndpoints {
            families.append(.counter("token_sidecar_credential_endpoint_requests_total",
                                     help: "Requests to the credential endpoints (credentialEndpoints:), by endpoint, credential and status.",
                credentialEndpoints.sorted { ($0.key.endpoint, $0.key.credential, $0.key.status) < ($1.key.endpoint, $1.key.credential, $1.key.status) }.map {
                    MetricSample(labels: [MetricLabel("endpoint", $0.key.endpoint), MetricLabel("credential", $0.key.credential),
                                          MetricLabel("status", String($0.key.status))], value: Double($0.value))
                }))
        }
        if let configuration {
            families.append(.gauge("token_sidecar_config_info", help: "The running configuration: its file and version (the first 12 hex digits of the file's SHA-256).",
                                   [MetricSample(labels: [MetricLabel("file", configuration.file), MetricLabel("version", configuration.version)], value: 1)]))
            families.append(.gauge("token_sidecar_config_last_reload_successful",
                                   help: "1 when the last reload applied (or none was tried), 0 when it was refused and the previous configuration still runs.",
                                   [MetricSample(value: configuration.lastError == nil ? 1 : 0)]))
            families.append(.counter("token_sidecar_config_reloads_total", help: "Reloads (SIGHUP, POST /reload, a changed file), by result.",
                                     [MetricSample(labels: [MetricLabel("result", "applied")], value: configuration.reloads),
                                      MetricSample(labels: [MetricLabel("result", "refused")], value: configuration.failedReloads)]))
            families.append(.gauge("token_sidecar_config_loaded_timestamp_seconds", help: "When the running configuration was loaded (Unix time).",
                                   [MetricSample(value: configuration.loadedAt.secondsSince1970)]))
        }
        families.append(.counter("token_sidecar_requests_total", help: "Requests answered, by route, status code and protocol.",
            proxy.requests.sorted { ($0.key.route, $0.key.code, $0.key.http2 ? 1 : 0) < ($1.key.route, $1.key.code, $1.key.http2 ? 1 : 0) }.map {
                MetricSample(labels: [MetricLabel("route", $0.key.route), MetricLabel("code", String($0.key.code)),
                                      MetricLabel("protocol", $0.key.http2 ? "h2" : "http1")], value: Double($0.value))
            }))
        families.append(.histogram("token_sidecar_request_duration_seconds",
                                   help: "Time from a complete request head to the end of the response.",
                                   [histogram(proxy.duration)]))
        families.append(.gauge("token_sidecar_client_connections", help: "Open client connections.",
                               [MetricSample(value: proxy.clientConnections)]))
        families.append(.gauge("token_sidecar_upstream_connections", help: "Open upstream connections by backend and state.",
            proxy.upstreamConnections.sorted { ($0.key.upstream, $0.key.state) < ($1.key.upstream, $1.key.state) }.map {
                MetricSample(labels: [MetricLabel("upstream", $0.key.upstream), MetricLabel("state", $0.key.state)], value: $0.value)
            }))
        families.append(.counter("token_sidecar_upstream_errors_total", help: "Errors the proxy answered with, by Proxy-Status error type.",
                                 samples(proxy.upstreamErrors, label: "type")))
        families.append(.counter("token_sidecar_upstream_unauthorized_total",
                                 help: "Upstream 401 responses to an injected token, by credential.",
                                 samples(proxy.upstreamUnauthorized, label: "credential")))
        families.append(.counter("token_sidecar_upstream_discarded_total",
                                 help: "Upstream connections discarded after bytes beyond a complete response, by backend.",
                                 samples(proxy.upstreamDiscarded, label: "upstream")))
        // Every backend that handshook gets both samples, 0 included, so rates divide cleanly.
        families.append(.counter("token_sidecar_upstream_tls_handshakes_total",
                                 help: "Completed TLS handshakes with backends, by backend and whether they resumed an earlier session.",
                                 proxy.upstreamTLSHandshakes.sorted { $0.key < $1.key }.flatMap { upstream, total -> [MetricSample] in
                                     let resumed = proxy.upstreamTLSResumed[upstream] ?? 0
                                     return [MetricSample(labels: [MetricLabel("upstream", upstream), MetricLabel("resumed", "false")],
                                                          value: Double(total - resumed)),
                                             MetricSample(labels: [MetricLabel("upstream", upstream), MetricLabel("resumed", "true")],
                                                          value: Double(resumed))]
                                 }))
        families.append(.counter("token_sidecar_accept_errors_total",
                                 help: "Failed accept calls (descriptor or memory exhaustion); accepting pauses after each.",
                                 [MetricSample(value: Double(proxy.acceptErrors))]))
        families.append(.counter("token_sidecar_spooled_responses_total",
                                 help: "Responses that went through a spool file because their client fell behind.",
                                 [MetricSample(value: Double(proxy.spooledResponses))]))
        families.append(.gauge("token_sidecar_spool_bytes", help: "Bytes held in response spool files now.",
                               [MetricSample(value: proxy.spoolBytes)]))
        families.append(.gauge("token_sidecar_buffered_bytes",
                               help: "Bytes queued in memory toward clients that fall behind (beyond 16 KiB each).",
                               [MetricSample(value: proxy.bufferedBytes)]))
        families.append(.counter("token_sidecar_stalled_clients_cut_total",
                                 help: "Responses cut short because their client stopped reading while holding a backend connection another request waited for.",
                                 [MetricSample(value: Double(proxy.stalledClientsCut))]))
        families.append(.counter("token_sidecar_drained_responses_total",
                                 help: "Responses whose client left with at most 1 MiB to come, read to their end and dropped to keep the backend connection.",
                                 [MetricSample(value: Double(proxy.drainedResponses))]))
        families.append(.counter("token_sidecar_http2_refused_total",
                                 help: "What HTTP/2 apps sent that the proxy refused (a stream reset or refused, a 431, or a connection told to calm down or ended), by reason.",
                                 samples(proxy.http2Refused, label: "reason")))
        families.append(.counter("token_sidecar_credential_injections_total",
                                 help: "Requests whose token went elsewhere than Authorization: Bearer (a route's inject placement, or where the app put a placeholder), by route and placement.",
            proxy.credentialInjections.sorted { ($0.key.route, $0.key.placement) < ($1.key.route, $1.key.placement) }.map {
                MetricSample(labels: [MetricLabel("route", $0.key.route), MetricLabel("placement", $0.key.placement)], value: Double($0.value))
            }))
        families.append(.counter("token_sidecar_policy_decisions_total",
                                 help: "Audit decisions by route, credential and decision (allowed, denied, audited: denied by rules the route only audits).",
            proxy.policyDecisions.sorted { ($0.key.route, $0.key.credential, $0.key.decision) < ($1.key.route, $1.key.credential, $1.key.decision) }.map {
                MetricSample(labels: [MetricLabel("route", $0.key.route), MetricLabel("credential", $0.key.credential),
                                      MetricLabel("decision", $0.key.decision)], value: Double($0.value))
            }))
        if !limits.isEmpty {
            families.append(.gauge("token_sidecar_limit_remaining",
                                   help: "What is left of each route's and credential's limits: tokens in the rate's bucket, requests in the budget's period.",
                limits.flatMap { status -> [MetricSample] in
                    var samples: [MetricSample] = []
                    if let tokens = status.rateTokens {
                        samples.append(MetricSample(labels: [MetricLabel("scope", status.scope), MetricLabel("limit", "rate")], value: tokens))
                    }
                    if let remaining = status.budgetRemaining {
                        samples.append(MetricSample(labels: [MetricLabel("scope", status.scope), MetricLabel("limit", "budget")], value: remaining))
                    }
                    return samples
                }))
            families.append(.counter("token_sidecar_limit_refused_total", help: "Requests refused with 429 by a limit, by scope and limit.",
                limits.flatMap { status -> [MetricSample] in
                    var samples: [MetricSample] = []
                    if status.config.rate != nil {
                        samples.append(MetricSample(labels: [MetricLabel("scope", status.scope), MetricLabel("limit", "rate")],
                                                    value: Double(status.refusedRate)))
                    }
                    if status.config.budget != nil {
                        samples.append(MetricSample(labels: [MetricLabel("scope", status.scope), MetricLabel("limit", "budget")],
                                                    value: Double(status.refusedBudget)))
                    }
                    return samples
                }))
        }
        families.append(.counter("token_sidecar_upgraded_connections_total",
                                 help: "Connections that switched protocols after a 101 (WebSocket), by route.",
                                 samples(proxy.upgradedConnections, label: "route")))
        families.append(.gauge("token_sidecar_upgraded_connections_open", help: "Upgraded connections open now, by route.",
            proxy.upgradedOpen.sorted { $0.key < $1.key }.map { MetricSample(labels: [MetricLabel("route", $0.key)], value: $0.value) }))
        families.append(.counter("token_sidecar_intercept_handshake_failures_total",
                                 help: "TLS handshakes apps refused or broke off on intercepted tunnels (not trusting the CA, pinning), by host and reason.",
            proxy.interceptHandshakeFailures.sorted { ($0.key.host, $0.key.reason) < ($1.key.host, $1.key.reason) }.map {
                MetricSample(labels: [MetricLabel("host", $0.key.host), MetricLabel("reason", $0.key.reason)], value: Double($0.value))
            }))
        families.append(.counter("token_sidecar_intercept_certificates_minted_total",
                                 help: "Leaf certificates minted for intercepted hosts (one signature each).",
                                 [MetricSample(value: Double(proxy.interceptCertificatesMinted))]))
        var fetches: [MetricSample] = []
        var expiries: [MetricSample] = []
        var latency = LatencyHistogram()
        for status in tokens.sorted(by: { $0.name < $1.name }) {
            fetches.append(MetricSample(labels: [MetricLabel("credential", status.name), MetricLabel("result", "success")],
                                        value: status.counts.succeeded))
            for (reason, count) in status.counts.failed.sorted(by: { $0.key < $1.key }) {
                fetches.append(MetricSample(labels: [MetricLabel("credential", status.name), MetricLabel("result", reason)], value: count))
            }
            if let expiresAt = status.expiresAt {
                expiries.append(MetricSample(labels: [MetricLabel("credential", status.name)],
                                             value: wallClock.seconds(at: expiresAt)))
            }
            latency.merge(status.fetchLatency)
        }
        families.append(.counter("token_sidecar_token_fetches_total", help: "Token requests by credential and result.", fetches))
        families.append(.gauge("token_sidecar_token_expiry_timestamp_seconds",
                               help: "When the current token of each credential expires (Unix time).", expiries))
        families.append(.histogram("token_sidecar_token_fetch_duration_seconds", help: "Duration of token requests.",
                                   [histogram(latency)]))
        families += sharedCacheFamilies(tokens)
        families.append(.counter("token_sidecar_dpop_nonce_retries_total",
                                 help: "Requests sent again once with a DPoP nonce a server demanded (RFC 9449 §8, §9), by credential and server (token or resource).",
            tokens.filter { $0.variant == nil }.sorted { $0.name < $1.name }.flatMap { status -> [MetricSample] in
                guard let retries = status.dpopNonceRetries else { return [] }
                return [MetricSample(labels: [MetricLabel("credential", status.name), MetricLabel("server", "token")], value: Double(retries.tokenEndpoint)),
                        MetricSample(labels: [MetricLabel("credential", status.name), MetricLabel("server", "resource")], value: Double(retries.resource))]
            }))
        // Tokens fetched per request: only the route and the credential as labels (a scope set
        // or a caller would make the series unbounded).
        let labels = { (entry: (route: String, variants: TokenVariants)) in
            [MetricLabel("credential", entry.variants.name), MetricLabel("route", entry.route)]
        }
        families.append(.gauge("token_sidecar_per_request_tokens",
                               help: "Tokens held for routes that fetch them per request (per caller or scope set), at most cacheSize per route.",
                               variants.map { MetricSample(labels: labels($0), value: Double($0.variants.count)) }))
        families.append(.counter("token_sidecar_per_request_tokens_dropped_total",
                                 help: "Tokens fetched per request that were dropped: least recently used beyond cacheSize, or unused for 15 minutes.",
                                 variants.map { MetricSample(labels: labels($0), value: Double($0.variants.droppedCount)) }))
        if let tracing { families += traceFamilies(tracing) }
        return families
    }

    /// Trace export, when it is on: spans exported, dropped (and why), export requests.
    static func traceFamilies(_ counts: ExportCounts) -> [MetricFamily] {
        [
            .counter("token_sidecar_trace_spans_exported_total", help: "Spans the OTLP receiver accepted.",
                     [MetricSample(value: Double(counts.exported))]),
            .counter("token_sidecar_trace_spans_dropped_total",
                     help: "Spans dropped: the export queue was full (queue_full) or their batch failed for good (export_failed).",
                     [MetricSample(labels: [MetricLabel("reason", "queue_full")], value: Double(counts.droppedQueueFull)),
                      MetricSample(labels: [MetricLabel("reason", "export_failed")], value: Double(counts.droppedExportFailed))]),
            .counter("token_sidecar_trace_exports_total", help: "OTLP export requests, by outcome (each retry counts).",
                     [MetricSample(labels: [MetricLabel("outcome", "accepted")], value: Double(counts.exportsAccepted)),
                      MetricSample(labels: [MetricLabel("outcome", "failed")], value: Double(counts.exportsFailed))]),
            .gauge("token_sidecar_trace_queued_spans", help: "Spans waiting to be exported.",
                   [MetricSample(value: Double(counts.queued))]),
        ]
    }

    private static func histogram(_ histogram: LatencyHistogram) -> HistogramSample {
        let cumulative = histogram.cumulative
        // Finite buckets only: the renderer writes the one `+Inf` bucket from the count.
        let buckets = zip(LatencyHistogram.bounds, cumulative).map { HistogramSample.Bucket(upperBound: $0, cumulativeCount: $1) }
        return HistogramSample(buckets: buckets, sum: histogram.sum, count: histogram.count)
    }

    /// One sample per key, labelled `label`, in key order (stable scrapes diff cleanly).
    private static func samples<Count: BinaryInteger>(_ counts: [String: Count], label: String) -> [MetricSample] {
        counts.sorted { $0.key < $1.key }.map { MetricSample(labels: [MetricLabel(label, $0.key)], value: Double($0.value)) }
    }
}

/// Converts monotonic instants to Unix time, from one reading of both clocks.
struct WallClockConverter {
    let now = ContinuousClock.now
    let wall = SystemTokenClock().wallClockSeconds

    func seconds(at instant: ContinuousClock.Instant) -> Double {
        let (s, atto) = (instant - now).components
        return wall + Double(s) + Double(atto) / 1e18
    }

    func time(at instant: ContinuousClock.Instant?) -> WallClockTime? {
        instant.map { WallClockTime(secondsSince1970: seconds(at: $0)) }
    }
}
