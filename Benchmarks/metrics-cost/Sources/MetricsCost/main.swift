import CoreMetrics
import Foundation
import Metrics
import Prometheus

// One "request" here is what the proxy records per answered request: a requests counter by
// route and status code, and a duration observation into a latency histogram.

let routes = ["api.test:80", "orders.local:80", "ledger.local:80", "unrouted"]
let codes = [200, 200, 200, 404, 503]
let requests = 2_000_000
let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

func measure(_ name: String, _ body: () -> Void) -> Double {
    body()  // warm-up
    var best = Double.infinity
    for _ in 0..<3 {
        let start = ContinuousClock.now
        body()
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        best = min(best, (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(requests))
    }
    print(name.padding(toLength: 60, withPad: " ", startingAt: 0) + String(format: "%7.1f ns/request", best))
    return best
}

// 1. The project's way: each worker owns a plain struct; no lock, no atomic.
struct Key: Hashable { let route: String; let code: Int }
struct WorkerMetrics {
    var requests: [Key: UInt64] = [:]
    var counts = [UInt64](repeating: 0, count: 15)
    var sum = 0.0
    mutating func observe(_ seconds: Double) {
        var index = 0
        while index < bounds.count && bounds[index] < seconds { index += 1 }
        counts[index] += 1
        sum += seconds
    }
}
var local = WorkerMetrics()
let own = measure("worker-local counters (the project's)") {
    for i in 0..<requests {
        local.requests[Key(route: routes[i & 3], code: codes[i % 5]), default: 0] += 1
        local.observe(Double(i & 1023) * 1e-5)
    }
    blackHole(local)
}

// 2. swift-metrics through swift-prometheus, handles looked up per request (the usual way).
let registry = PrometheusCollectorRegistry()
var factory = PrometheusMetricsFactory(registry: registry)
factory.defaultDurationHistogramBuckets = bounds.map { .nanoseconds(Int64($0 * 1e9)) }
MetricsSystem.bootstrap(factory)
let perRequest = measure("swift-metrics + swift-prometheus, Counter/Timer per request") {
    for i in 0..<requests {
        CoreMetrics.Counter(label: "token_sidecar_requests_total", dimensions: [("route", routes[i & 3]), ("code", String(codes[i % 5]))])
            .increment()
        Metrics.Timer(label: "token_sidecar_request_duration_seconds").recordNanoseconds(Int64(i & 1023) * 10_000)
    }
}

// 3. The same with every handle created once and cached (the cheapest use of the API).
var counters: [Key: CoreMetrics.Counter] = [:]
for route in routes {
    for code in Set(codes) {
        counters[Key(route: route, code: code)] = CoreMetrics.Counter(label: "token_sidecar_requests_total",
                                                          dimensions: [("route", route), ("code", String(code))])
    }
}
let timer = Metrics.Timer(label: "token_sidecar_request_duration_seconds")
let cached = measure("swift-metrics + swift-prometheus, cached handles") {
    for i in 0..<requests {
        counters[Key(route: routes[i & 3], code: codes[i % 5])]!.increment()
        timer.recordNanoseconds(Int64(i & 1023) * 10_000)
    }
}

var exposition: [UInt8] = []
registry.emit(into: &exposition)
print("exposition check: \(exposition.count) bytes from swift-prometheus")
print(String(format: "ratio to the project's counters: per-request handles %.1fx, cached handles %.1fx", perRequest / own, cached / own))
