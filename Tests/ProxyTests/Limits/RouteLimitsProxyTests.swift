import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// `limits:` end to end: a rate held under five times its load, a budget and a credential's
/// limit shared by two routes, refusals as 429 with `Retry-After` and `Proxy-Status` over
/// HTTP/1.1 and HTTP/2, and a route that only audits its limits.
final class RouteLimitsProxyTests: XCTestCase {
    private var backend: Backend!
    private var proxy: ProxyHarness!

    override func setUpWithError() throws {
        backend = try Backend()
    }

    override func tearDown() {
        proxy = nil
        backend = nil
    }

    private func route(_ host: String, _ extra: String = "") -> String {
        """
          - host: "\(host)"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        \(extra)
        """
    }

    /// One request for `http://HOST/PATH` in absolute form (as an app through a proxy sends it).
    private static func get(_ client: RawClient, _ host: String, _ path: String) throws -> TestResponse {
        client.send("GET http://\(host)\(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        return try client.readResponse()
    }

    /// `LIMIT_SECONDS` (default 20) at five times the rate: what is admitted is the burst plus the
    /// rate for the time the load lasted, within 5 %; everything else is 429 with Retry-After.
    func testARateHoldsUnderFiveTimesItsLoad() throws {
        let rate = 40.0, burst = 20
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              partner: {type: static, token: limits-token}
            routes:
            \(route("api.test", "    limits: {rate: {perSecond: \(Int(rate)), burst: \(burst)}}"))
            """)
        let seconds = Double(ProcessInfo.processInfo.environment["LIMIT_SECONDS"] ?? "") ?? 20
        let threads = 2
        let interval = 1 / (rate * 5 / Double(threads))
        let port = proxy.port
        let results = Locked<[(status: Int, retryAfter: String?, proxyStatus: String?)]>([])
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            guard let client = try? RawClient(port: port) else { return }
            var next = Date().addingTimeInterval(Double(thread) * interval / 2)
            var sent = 0
            while Date().timeIntervalSince(started) < seconds && sent < 100_000 {
                let wait = next.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                next = next.addingTimeInterval(interval)
                sent += 1
                guard let response = try? Self.get(client, "api.test", "/load/\(sent)") else { return }
                results.withLock { $0.append((response.status, response.header("retry-after"), response.header("proxy-status"))) }
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        let all = results.withLock { $0 }
        let admitted = all.filter { $0.status == 200 }.count
        let refused = all.filter { $0.status == 429 }
        print("rate \(Int(rate))/s burst \(burst) at \(all.count) requests in \(String(format: "%.1f", elapsed)) s: \(admitted) admitted, \(refused.count) refused")
        XCTAssertEqual(admitted + refused.count, all.count, "nothing but 200 and 429")
        XCTAssertGreaterThan(Double(all.count), rate * 3 * elapsed, "the load stayed well above the rate")
        let expected = Double(burst) + rate * elapsed
        XCTAssertEqual(Double(admitted), expected, accuracy: rate * elapsed * 0.05, "the burst and the rate, within 5 %")
        XCTAssertTrue(refused.allSatisfy { Int($0.retryAfter ?? "") == 1 }, "Retry-After: 1 (a token comes within a second)")
        XCTAssertTrue(refused.allSatisfy { $0.proxyStatus?.contains("error=http_request_denied") == true
            && $0.proxyStatus?.contains("route api.test:80: rate limit reached") == true })
        XCTAssertEqual(backend.requests().count, admitted, "nothing refused reached the backend")
        let limit = try XCTUnwrap(proxy.server.limiters.statuses().first)
        XCTAssertEqual(limit.scope, "route api.test:80")
        XCTAssertEqual(Int(limit.refusedRate), refused.count)
    }

    /// A credential's budget is spent by every route using it; a route's own budget by itself.
    /// The refusal says when the period ends; over HTTP/2 the same answer.
    func testABudgetSharedByTheRoutesOfACredential() throws {
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              partner: {type: static, token: limits-token, limits: {budget: {requests: 4, per: hour}}}
            routes:
            \(route("a.test"))
            \(route("b.test", "    limits: {budget: {requests: 1, per: minute}}"))
            """)
        func get(_ host: String) throws -> TestResponse {
            let client = try RawClient(port: proxy.port)
            defer { client.close() }
            return try Self.get(client, host, "/x")
        }
        XCTAssertEqual(try get("b.test").status, 200)
        let routeSpent = try get("b.test")
        XCTAssertEqual(routeSpent.status, 429, "b.test's own budget: one a minute")
        XCTAssertTrue(routeSpent.header("proxy-status")?.contains("route b.test:80: budget spent for this period") == true)
        XCTAssertLessThanOrEqual(Int(routeSpent.header("retry-after") ?? "") ?? 0, 60)
        XCTAssertGreaterThanOrEqual(Int(routeSpent.header("retry-after") ?? "") ?? 0, 1)
        XCTAssertEqual(try (0..<3).map { _ in try get("a.test").status }, [200, 200, 200], "the credential's 4th")
        let spent = try get("a.test")
        XCTAssertEqual(spent.status, 429)
        XCTAssertTrue(spent.header("proxy-status")?.contains("credential partner: budget spent") == true, "\(spent.headers)")
        XCTAssertEqual(spent.json?["error"] as? String, "http_request_denied")
        // HTTP/2 (h2c prior knowledge): the same refusal.
        let outcome = try Command.run(["curl", "-sS", "-o", "/dev/null", "-D", "-", "--http2-prior-knowledge",
                                       "--connect-to", "a.test:80:127.0.0.1:\(proxy.port)", "http://a.test/x"])
        XCTAssertTrue(outcome.out.hasPrefix("HTTP/2 429"), outcome.out)
        XCTAssertTrue(outcome.out.lowercased().contains("retry-after:"), outcome.out)
        XCTAssertEqual(backend.requests().count, 4)
        let statuses = proxy.server.limiters.statuses()
        XCTAssertEqual(statuses.map(\.scope), ["credential partner", "route b.test:80"])
        XCTAssertEqual(statuses.map(\.budgetRemaining), [0, 0])
    }

    /// A route that only audits goes over its limits without a refusal; its records say so.
    func testAnAuditingRouteIsNeverRefusedButRecorded() throws {
        let file = auditFilePath()
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            audit: {file: "\(file)"}
            enforcement: audit
            credentials:
              partner: {type: static, token: limits-token}
            routes:
            \(route("api.test", "    limits: {rate: {perSecond: 0.1, burst: 1}}"))
            """)
        let client = try RawClient(port: proxy.port)
        XCTAssertEqual(try (0..<4).map { _ in try Self.get(client, "api.test", "/x").status }, [200, 200, 200, 200])
        let records = auditRecords(file, count: 4)
        XCTAssertEqual(records.map { $0["decision"] as? String }, ["allowed", "audited", "audited", "audited"])
        XCTAssertEqual(records.map { $0["reason"] as? String }, [nil, "rate_limit", "rate_limit", "rate_limit"])
    }
}
