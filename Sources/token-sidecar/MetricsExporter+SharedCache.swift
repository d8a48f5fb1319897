import Admin
import TokenManager

extension MetricsExporter {
    /// The shared token cache's families (none when no credential uses one): reads by result,
    /// leases by outcome, fallbacks to fetching alone, store errors, and whether it answers.
    static func sharedCacheFamilies(_ tokens: [TokenStatus]) -> [MetricFamily] {
        let shared = tokens.sorted { $0.name < $1.name }.compactMap { status in status.sharedCache.map { (status.name, $0) } }
        guard !shared.isEmpty else { return [] }
        var reads: [MetricSample] = []
        var leases: [MetricSample] = []
        var fallbacks: [MetricSample] = []
        var errors: [MetricSample] = []
        var up: [MetricSample] = []
        for (name, status) in shared {
            let credential = MetricLabel("credential", name)
            let counts = status.counts
            for (result, value) in [("hit", counts.hits), ("miss", counts.misses), ("corrupt", counts.corrupt)] {
                reads.append(MetricSample(labels: [credential, MetricLabel("result", result)], value: value))
            }
            for (outcome, value) in [("won", counts.leaseWon), ("waited", counts.leaseWaited), ("expired", counts.leaseExpired)] {
                leases.append(MetricSample(labels: [credential, MetricLabel("outcome", outcome)], value: value))
            }
            fallbacks.append(MetricSample(labels: [credential], value: counts.fallbacks))
            errors.append(MetricSample(labels: [credential], value: counts.errors))
            up.append(MetricSample(labels: [credential], value: status.available ? 1 : 0))
        }
        return [
            .counter("token_sidecar_shared_cache_reads_total",
                     help: "Shared token cache reads by credential and result (hit: a token adopted, no fetch; corrupt: did not open, counted as a miss too).",
                     reads),
            .counter("token_sidecar_shared_cache_leases_total",
                     help: "Fleet-wide fetch leases by credential and outcome (won: fetched for the fleet; waited: another replica held it; expired: taken over after waiting).",
                     leases),
            .counter("token_sidecar_shared_cache_fallbacks_total",
                     help: "Fetches made without the fleet because the shared cache failed or the wait for another replica ran out.",
                     fallbacks),
            .counter("token_sidecar_shared_cache_errors_total", help: "Shared token cache operations that failed or timed out.", errors),
            .gauge("token_sidecar_shared_cache_up", help: "Whether the shared token cache answered the last operation (1) or not (0).", up),
        ]
    }
}
