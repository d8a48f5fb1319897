import Admin
import EventLoop
import Foundation
import TestSupport
import XCTest

final class AdminServerTests: XCTestCase {
    private var thread: ServerThread?
    private let serving = Locked(true)
    private let readiness = Locked(Readiness(ready: false, missing: ["credential partner: no valid token (last error: connection refused)"]))
    private let metricsCalls = Locked(0)

    override func tearDown() {
        thread?.stop()
        thread = nil
    }

    private func startAdmin() throws -> Int {
        let serving = self.serving, readiness = self.readiness, metricsCalls = self.metricsCalls
        let provider = AdminProvider(
            isServing: { serving.withLock { $0 } },
            readiness: { complete in
                // Answer from another thread, as a token manager on its own loop would.
                let value = readiness.withLock { $0 }
                DispatchQueue.global().async { complete(value) }
            },
            metrics: { complete in
                metricsCalls.withLock { $0 += 1 }
                var histogram = Histogram()
                histogram.observe(0.002)
                complete([
                    .counter("sidecar_requests_total", help: "Requests.", [MetricSample(labels: [MetricLabel("code", "200")], value: 7)]),
                    .histogram("sidecar_request_duration_seconds", help: "Latency.", [HistogramSample(histogram: histogram)]),
                ])
            },
            tokens: { complete in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) {
                    complete([
                        TokenReport(name: "partner", state: "valid", fingerprint: "a1b2c3d4",
                                    issuedAt: WallClockTime(secondsSince1970: 1_700_000_000),
                                    expiresAt: WallClockTime(secondsSince1970: 1_700_003_600),
                                    nextRefresh: WallClockTime(secondsSince1970: 1_700_003_000),
                                    fetchCounts: ["started": 1, "succeeded": 1]),
                        TokenReport(name: "other", state: "failing", lastError: "HTTP 500 from token endpoint",
                                    fetchCounts: ["started": 3, "http_5xx": 3]),
                    ])
                }
            })
        let thread = try ServerThread { loop in [try AdminServer(address: loopback, loop: loop, provider: provider)] }
        try thread.start()
        self.thread = thread
        return thread.addresses[0].port
    }

    func testHealthz() throws {
        let port = try startAdmin()
        let ok = try fetch(port: port, "/healthz")
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.header("Content-Type"), "application/json")
        XCTAssertEqual(ok.text, #"{"status":"ok"}"#)
        serving.withLock { $0 = false }
        XCTAssertEqual(try fetch(port: port, "/healthz").status, 503)
    }

    func testReadyz() throws {
        let port = try startAdmin()
        let notReady = try fetch(port: port, "/readyz")
        XCTAssertEqual(notReady.status, 503)
        XCTAssertEqual(notReady.json?["ready"] as? Bool, false)
        XCTAssertEqual(notReady.json?["missing"] as? [String],
                       ["credential partner: no valid token (last error: connection refused)"])
        readiness.withLock { $0 = Readiness(ready: true) }
        let ready = try fetch(port: port, "/readyz")
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(ready.text, #"{"ready":true}"#)
        serving.withLock { $0 = false }
        let draining = try fetch(port: port, "/readyz")
        XCTAssertEqual(draining.status, 503, "not ready while shutting down")
        XCTAssertEqual(draining.json?["missing"] as? [String], ["shutting down"])
    }

    func testMetricsParseAsPrometheusText() throws {
        let port = try startAdmin()
        let response = try fetch(port: port, "/metrics")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        let families = try PrometheusTextParser.parse(response.text)
        XCTAssertEqual(families.map(\.name), ["sidecar_requests_total", "sidecar_request_duration_seconds"])
        XCTAssertEqual(families[0].samples.first?.value, 7)
        XCTAssertEqual(families[1].samples.last, .init(name: "sidecar_request_duration_seconds_count", labels: [:], value: 1))
    }

    func testTokensNeverCarryValues() throws {
        let port = try startAdmin()
        let response = try fetch(port: port, "/tokens")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Cache-Control"), "no-store")
        let reports = try XCTUnwrap(response.jsonValue as? [[String: Any]])
        XCTAssertEqual(reports.count, 2)
        XCTAssertEqual(reports[0]["name"] as? String, "partner")
        XCTAssertEqual(reports[0]["state"] as? String, "valid")
        XCTAssertEqual(reports[0]["fingerprint"] as? String, "a1b2c3d4")
        XCTAssertEqual(reports[0]["issuedAt"] as? String, "2023-11-14T22:13:20Z")
        XCTAssertEqual(reports[0]["expiresAt"] as? String, "2023-11-14T23:13:20Z")
        XCTAssertEqual(reports[0]["nextRefresh"] as? String, "2023-11-14T23:03:20Z")
        XCTAssertTrue(reports[0]["lastError"] is NSNull)
        XCTAssertEqual(reports[0]["fetchCounts"] as? [String: Int], ["started": 1, "succeeded": 1])
        XCTAssertTrue(reports[1]["fingerprint"] is NSNull)
        XCTAssertTrue(reports[1]["expiresAt"] is NSNull)
        XCTAssertEqual(reports[1]["lastError"] as? String, "HTTP 500 from token endpoint")
        XCTAssertEqual(Set(reports[0].keys),
                       ["name", "state", "fingerprint", "issuedAt", "expiresAt", "nextRefresh", "lastError", "fetchCounts"])
    }

    func testUnknownPathsAndMethods() throws {
        let port = try startAdmin()
        let missing = try fetch(port: port, "/nope")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.json?["error"] as? String, "not found")
        let post = try fetch(port: port, "/metrics", method: "POST")
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.header("Allow"), "GET, HEAD")
        XCTAssertEqual(metricsCalls.withLock { $0 }, 0, "a rejected method does not touch the provider")
        let head = try fetch(port: port, "/healthz", method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
    }

    func testRejectsEveryMalformedRequestTheProxyRejects() throws {
        let port = try startAdmin()
        for (name, raw, status) in MalformedRequests.vectors {
            let client = try RawClient(port: port)
            client.send(raw)
            XCTAssertEqual(try client.readResponse().status, status, name)
            XCTAssertTrue(client.waitForClose(acceptingReset: true), "\(name): connection not closed")
        }
        XCTAssertEqual(try fetch(port: port, "/healthz").status, 200, "still serving")
    }

    func testManyAsyncRequestsOnOneConnection() throws {
        let port = try startAdmin()
        let client = try RawClient(port: port)
        for _ in 0..<50 {
            XCTAssertEqual(try client.request("GET", "/tokens").status, 200)
            XCTAssertEqual(try client.request("GET", "/metrics").status, 200)
        }
    }
}
