import Foundation
import TestSupport
import XCTest

/// The admin listener of a running sidecar.
final class AdminEndpointTests: XCTestCase {
    private func get(_ port: Int, _ path: String) -> (status: Int, headers: [String: String], body: String)? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send("GET \(path) HTTP/1.1\r\nHost: admin\r\n\r\n")
        return client.response()
    }

    func testReadinessMetricsAndTokens() throws {
        let tokens = try FixtureServer.tokenServer(["delay": 1.5, "token_prefix": "SENTINEL-ADMIN-TOKEN-"])
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokens.port)/token"
            clientId: "c"
            secret: "SENTINEL-ADMIN-SECRET"
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        """)
        let sidecar = try SidecarProcess(configPath: path, waitForAdmin: true)
        let admin = try XCTUnwrap(sidecar.adminPort)

        XCTAssertEqual(get(admin, "/healthz")?.status, 200)
        let notReady = try XCTUnwrap(get(admin, "/readyz"))
        XCTAssertEqual(notReady.status, 503, "not ready before the first token")
        XCTAssertTrue(notReady.body.contains("partner"), notReady.body)

        var ready = false
        let deadline = Date().addingTimeInterval(10)
        while !ready && Date() < deadline {
            ready = get(admin, "/readyz")?.status == 200
            if !ready { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(ready, "ready once the token is there")

        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        for i in 0..<7 {
            client.send("GET /m/\(i)?secret=q HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(client.response()?.status, 200)
        }
        let denied = try XCTUnwrap(SimpleClient(port: sidecar.port))
        denied.send("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n")
        XCTAssertEqual(denied.response()?.status, 403)

        let metrics = try XCTUnwrap(get(admin, "/metrics"))
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") ?? false)
        let families = try PrometheusTextParser.parse(metrics.body)
        func value(_ name: String, _ labels: [String: String]) -> Double? {
            families.flatMap(\.samples).first { sample in
                sample.name == name && labels.allSatisfy { key, expected in sample.labels[key] == expected }
            }?.value
        }
        XCTAssertEqual(value("token_sidecar_requests_total", ["route": "api.test:80", "code": "200", "protocol": "http1"]), 7)
        XCTAssertEqual(value("token_sidecar_requests_total", ["route": "unrouted", "code": "403"]), 1)
        XCTAssertEqual(value("token_sidecar_upstream_errors_total", ["type": "http_request_denied"]), 1)
        XCTAssertEqual(value("token_sidecar_token_fetches_total", ["credential": "partner", "result": "success"]), 1)
        XCTAssertEqual(value("token_sidecar_request_duration_seconds_count", [:]), 8)
        XCTAssertNotNil(value("token_sidecar_token_expiry_timestamp_seconds", ["credential": "partner"]))
        XCTAssertNotNil(value("token_sidecar_client_connections", [:]))
        XCTAssertEqual(value("token_sidecar_token_fetch_duration_seconds_count", [:]), 1)
        XCTAssertFalse(metrics.body.contains("SENTINEL"))
        // Every histogram has exactly one +Inf bucket, equal to its _count (a strict parser
        // rejects a scrape with two), and promtool accepts the whole scrape.
        for histogram in ["token_sidecar_request_duration_seconds", "token_sidecar_token_fetch_duration_seconds"] {
            let infinite = families.flatMap(\.samples).filter { $0.name == histogram + "_bucket" && $0.labels["le"] == "+Inf" }
            XCTAssertEqual(infinite.count, 1, histogram)
            XCTAssertEqual(infinite.first?.value, value(histogram + "_count", [:]), histogram)
        }
        try PromTool.check(metrics.body)

        let report = try XCTUnwrap(get(admin, "/tokens"))
        XCTAssertEqual(report.status, 200)
        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [[String: Any]])
        XCTAssertEqual(entries.first?["name"] as? String, "partner")
        XCTAssertNotNil(entries.first?["fingerprint"] as? String)
        XCTAssertFalse(report.body.contains("SENTINEL"), "never the token or the secret")

        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
        let logs = sidecar.startupLines.joined(separator: "\n") + sidecar.remainingLog()
        XCTAssertFalse(logs.contains("SENTINEL"), "never the token or the secret in logs")
        XCTAssertFalse(logs.contains("secret=q"), "access log paths drop the query string")
        XCTAssertTrue(logs.contains("\"msg\":\"access\""), "an access log line per request")
        let access = logs.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["msg"] as? String == "access" }
        XCTAssertEqual(access.count, 8, "one line per answered request")
        let routed = try XCTUnwrap(access.first { $0["status"] as? String == "200" })
        XCTAssertEqual(Set(routed.keys), ["time", "level", "msg", "auth", "authority", "bytes_in", "bytes_out", "duration_ms", "method",
                                          "path", "placement", "protocol", "route", "status", "token", "upstream", "worker"])
        XCTAssertEqual(routed["protocol"] as? String, "HTTP/1.1")
        XCTAssertEqual(routed["placement"] as? String, "header:authorization", "where the token went, never its value")
        XCTAssertEqual(routed["level"] as? String, "info")
        XCTAssertEqual(routed["method"] as? String, "GET")
        XCTAssertEqual(routed["route"] as? String, "api.test:80")
        XCTAssertEqual(routed["worker"] as? String, "0")
        XCTAssertEqual(routed["auth"] as? String, "injected")
        let refused = try XCTUnwrap(access.first { $0["status"] as? String == "403" })
        XCTAssertEqual(refused["proxy_status"] as? String, "http_request_denied")
        XCTAssertEqual(refused["auth"] as? String, "none")
        XCTAssertEqual(refused["route"] as? String, "unrouted")
    }

    /// A route that puts its key in a query parameter and one where the app sends a placeholder:
    /// the access log and the metric name each placement, never the key or the placeholder.
    func testPlacementsAreNamedInTheAccessLogAndMetricsWithoutTheirValues() throws {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let placeholder = "tsp_adminPlaceholder0123456789abcdef"
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          maps: {type: static, token: "SENTINEL-MAPS-KEY"}
          anthropic: {type: static, token: "SENTINEL-ANTHROPIC-KEY", placeholder: "\(placeholder)"}
        routes:
          - host: "maps.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: maps
            inject: {query: key}
          - host: "llm.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: anthropic
        """)
        let sidecar = try SidecarProcess(configPath: path, waitForAdmin: true)
        let admin = try XCTUnwrap(sidecar.adminPort)
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        for i in 0..<3 {
            client.send("GET /geo/\(i)?q=x HTTP/1.1\r\nHost: maps.test\r\n\r\n")
            XCTAssertEqual(client.response()?.status, 200)
        }
        client.send("POST /v1/messages HTTP/1.1\r\nHost: llm.test\r\nx-api-key: \(placeholder)\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 200)
        let seen = backend.log("b.jsonl").filter { $0["event"] as? String == "request" }
        XCTAssertEqual(seen.count, 4)
        XCTAssertEqual(seen.filter { ($0["target"] as? String ?? "").contains("key=SENTINEL-MAPS-KEY") }.count, 3, "\(seen.map { $0["target"] ?? "" })")

        let metrics = try XCTUnwrap(get(admin, "/metrics"))
        let samples = try PrometheusTextParser.parse(metrics.body).flatMap(\.samples).filter { $0.name == "token_sidecar_credential_injections_total" }
        XCTAssertEqual(samples.first { $0.labels["route"] == "maps.test:80" && $0.labels["placement"] == "query:key" }?.value, 3)
        XCTAssertEqual(samples.first { $0.labels["route"] == "llm.test:80" && $0.labels["placement"] == "placeholder" }?.value, 1)
        XCTAssertFalse(metrics.body.contains("SENTINEL") || metrics.body.contains(placeholder))

        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
        let logs = (sidecar.startupLines + [sidecar.remainingLog()]).joined(separator: "\n")
        XCTAssertFalse(logs.contains("SENTINEL") || logs.contains(placeholder), "never a key or a placeholder in logs")
        let access = logs.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["msg"] as? String == "access" }
        XCTAssertEqual(access.map { $0["placement"] as? String ?? "none" }, ["query:key", "query:key", "query:key", "placeholder"])
    }

    /// TLS handshakes with a backend are counted in one family, by whether they resumed (both
    /// samples per backend): a backend that closes after every response makes each request a
    /// new connection.
    func testUpstreamTLSHandshakesAreCountedByWhetherTheyResumed() throws {
        let ca = try TestCA()
        let backend = try FixtureServer(script: "ProxyTests/Fixtures/sse_backend.py",
                                        arguments: ["--tls-cert", ca.localhostCert, "--tls-key", ca.localhostKey])
        let path = try writeConfig(staticRouteConfig(upstream: "https://localhost:\(backend.port)",
                                                     extra: ["accessLog: false"]).replacingOccurrences(
            of: "    credential: api", with: "    credential: api\n    caFile: \"\(ca.caCert)\""))
        let sidecar = try SidecarProcess(configPath: path, waitForAdmin: true)
        let admin = try XCTUnwrap(sidecar.adminPort)
        for _ in 0..<4 {
            let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
            client.send("GET /sse-close?n=1&interval=0 HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(client.response()?.status, 200)
        }
        let metrics = try XCTUnwrap(get(admin, "/metrics"))
        let samples = try PrometheusTextParser.parse(metrics.body).flatMap(\.samples)
            .filter { $0.name == "token_sidecar_upstream_tls_handshakes_total" }
        let upstream = "localhost:\(backend.port)"
        let full = try XCTUnwrap(samples.first { $0.labels == ["upstream": upstream, "resumed": "false"] }?.value, "\(samples)")
        let resumed = try XCTUnwrap(samples.first { $0.labels == ["upstream": upstream, "resumed": "true"] }?.value, "\(samples)")
        XCTAssertEqual(full + resumed, 4, "one handshake per request, each in exactly one sample")
        XCTAssertGreaterThanOrEqual(full, 1, "the first is a full handshake")
        // (How many of the others resume depends on when this Python server's tickets reach the
        // client before it closes — between 0 and 3 here; that every later connection resumes
        // with a server that accepts a ticket again is TLSServerStreamTests' and the benchmark's.)
        XCTAssertFalse(metrics.body.contains("token_sidecar_upstream_tls_resumed_total"), "one family, labelled")
        try PromTool.check(metrics.body)
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
    }
}
