import Foundation
import TestSupport
import XCTest

/// Traces from the running binary to a real OTLP receiver that decodes them with the official
/// opentelemetry-proto schema (Tests/ProxyTests/Fixtures/otlp_receiver.py).
final class TraceExportTests: XCTestCase {
    private let appTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    private let appSpanID = "00f067aa0ba902b7"

    private func receiver(port: Int? = nil) throws -> FixtureProcess {
        try FixtureProcess(script: "ProxyTests/Fixtures/otlp_receiver.py",
                           arguments: ["--dir", "{dir}"] + (port.map { ["--port", String($0)] } ?? []), python: OTelPython.path)
    }

    private func oauthConfig(tokens: FixtureServer, backend: FixtureServer, extra: [String] = []) throws -> String {
        try writeConfig(([
            "listen: \"127.0.0.1:0\"", "admin: \"127.0.0.1:0\"",
            "credentials:",
            "  partner:",
            "    type: oauth2",
            "    tokenUrl: \"http://127.0.0.1:\(tokens.port)/token\"",
            "    clientId: \"client-1\"",
            "    secret: \"SENTINEL-SECRET-VALUE\"",
            "routes:",
            "  - host: \"api.test\"",
            "    upstream: \"http://127.0.0.1:\(backend.port)\"",
            "    credential: partner",
        ] + extra).joined(separator: "\n"))
    }

    private func tracingEnvironment(_ receiver: FixtureProcess, _ more: [String: String] = [:]) -> [String: String] {
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100",
         "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=SENTINEL-HEADER-VALUE"].merging(more) { _, new in new }
    }

    /// Waits (bounded) until `condition` holds for the receiver's spans; returns them.
    private func spans(_ receiver: FixtureProcess, timeout: TimeInterval = 15,
                       until condition: ([[String: Any]]) -> Bool) -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(timeout)
        var found = receiver.jsonLines("spans.jsonl")
        while !condition(found) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            found = receiver.jsonLines("spans.jsonl")
        }
        return found
    }

    /// The header lists of the requests the backend logged, in order.
    private func requestHeaders(_ backend: FixtureServer) -> [[[String]]] {
        backend.log("b.jsonl").filter { $0["event"] as? String == "request" }.compactMap { $0["headers"] as? [[String]] }
    }

    private func attributes(_ span: [String: Any]) -> [String: Any] { span["attributes"] as? [String: Any] ?? [:] }

    private func get(_ port: Int, _ path: String, headers: [String] = []) -> (status: Int, headers: [String: String], body: String)? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send((["GET http://api.test\(path) HTTP/1.1", "Host: api.test"] + headers).joined(separator: "\r\n") + "\r\n\r\n")
        return client.response()
    }

    /// A request with the app's traceparent on a cold start (it waits for the first token),
    /// then a 401 replay: the span tree, the upstream's traceparent, links, and no secret anywhere.
    func testTheRequestsTraceJoinsTheAppsAndShowsTheTokenWaitAndTheReplay() throws {
        let otlp = try receiver()
        let tokens = try FixtureServer.tokenServer(["delay": 0.5, "token_prefix": "SENTINEL-TOKEN-"])
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let sidecar = try CapturedSidecar(configPath: try oauthConfig(tokens: tokens, backend: backend),
                                          environment: tracingEnvironment(otlp, ["OTEL_SERVICE_NAME": "orders-sidecar"]))
        let parent = "traceparent: 00-\(appTraceID)-\(appSpanID)-01"
        XCTAssertEqual(get(sidecar.port, "/hello?q=SENTINEL-QUERY", headers: [parent, "tracestate: congo=t61rcWkgMzE", "baggage: k=v"])?.status, 200)
        // The backend answers 401 to the first token: the sidecar refetches and replays.
        XCTAssertEqual(get(sidecar.port, "/reject?token=SENTINEL-TOKEN-1", headers: [parent])?.status, 200)

        let all = spans(otlp) { found in found.filter { $0["kind"] as? String == "SPAN_KIND_CLIENT" }.count >= 5 && found.count >= 7 }
        let servers = all.filter { $0["kind"] as? String == "SPAN_KIND_SERVER" }
        let fetches = all.filter { $0["name"] as? String == "token fetch" }
        let upstream = all.filter { $0["kind"] as? String == "SPAN_KIND_CLIENT" && $0["name"] as? String != "token fetch" }
        XCTAssertEqual(servers.count, 2, "\(all)")
        XCTAssertEqual(fetches.count, 2, "the first fetch and the refetch after the 401")
        XCTAssertEqual(upstream.count, 3, "one attempt, then the 401 and its replay")

        // 1. The cold start.
        let first = try XCTUnwrap(servers.first { (attributes($0)["url.path"] as? String) == "/hello" })
        XCTAssertEqual(first["trace_id"] as? String, appTraceID)
        XCTAssertEqual(first["parent_span_id"] as? String, appSpanID, "the app's span is the parent")
        XCTAssertEqual(first["trace_state"] as? String, "congo=t61rcWkgMzE")
        XCTAssertEqual(attributes(first)["http.request.method"] as? String, "GET")
        XCTAssertEqual(attributes(first)["http.response.status_code"] as? Int, 200)
        XCTAssertEqual(attributes(first)["token_sidecar.credential"] as? String, "partner")
        XCTAssertEqual(attributes(first)["token_sidecar.placement"] as? String, "header:authorization", "where the token went")
        let waited = try XCTUnwrap(attributes(first)["token_sidecar.token.wait"] as? Double)
        XCTAssertGreaterThanOrEqual(waited, 0.3, "it waited for the first fetch (0.5 s)")
        let firstLinks = (first["links"] as? [[String: Any]] ?? []).compactMap { $0["span_id"] as? String }
        XCTAssertEqual(firstLinks.count, 1, "a link to the fetch it waited for")
        let firstFetch = try XCTUnwrap(fetches.first { fetch in
            (attributes(fetch)["token_sidecar.outcome"] as? String) == "success" && firstLinks.contains(fetch["span_id"] as? String ?? "")
        })
        XCTAssertEqual(firstFetch["parent_span_id"] as? String, "", "a fetch is the root of a trace of its own")
        XCTAssertEqual(attributes(firstFetch)["token_sidecar.grant"] as? String, "client_credentials")
        XCTAssertEqual(attributes(firstFetch)["token_sidecar.client_auth"] as? String, "client_secret_basic")
        XCTAssertEqual(attributes(firstFetch)["token_sidecar.attempt"] as? Int, 1)
        XCTAssertEqual(attributes(firstFetch)["token_sidecar.shared_cache"] as? Bool, false)
        let firstAttempt = try XCTUnwrap(upstream.first { $0["parent_span_id"] as? String == first["span_id"] as? String })
        XCTAssertEqual(firstAttempt["trace_id"] as? String, appTraceID)
        XCTAssertEqual(attributes(firstAttempt)["url.full"] as? String, "http://127.0.0.1:\(backend.port)/hello")

        // What the backend received: the client span as its parent, the app's tracestate and baggage untouched.
        let headers = try XCTUnwrap(requestHeaders(backend).first)
        func values(_ name: String) -> [String] { headers.filter { $0[0].lowercased() == name }.map { $0[1] } }
        XCTAssertEqual(values("traceparent"), ["00-\(appTraceID)-\(firstAttempt["span_id"] as? String ?? "?")-01"])
        XCTAssertEqual(values("tracestate"), ["congo=t61rcWkgMzE"])
        XCTAssertEqual(values("baggage"), ["k=v"])

        // 2. The replay: two attempts under one server span, an event saying why, a link to the refetch.
        let second = try XCTUnwrap(servers.first { (attributes($0)["url.path"] as? String) == "/reject" })
        let attempts = upstream.filter { $0["parent_span_id"] as? String == second["span_id"] as? String }
            .sorted { ($0["start_ns"] as? Int ?? 0) < ($1["start_ns"] as? Int ?? 0) }
        XCTAssertEqual(attempts.map { attributes($0)["http.response.status_code"] as? Int }, [401, 200])
        XCTAssertEqual((attempts.first?["status"] as? [String: Any])?["code"] as? String, "STATUS_CODE_ERROR")
        XCTAssertEqual(attributes(attempts[1])["http.request.resend_count"] as? Int, 1)
        XCTAssertNil(attributes(attempts[1])["error.type"], "the replay succeeded")
        // The 401 attempt ends with its answer; the wait for the refetch is the request's, not the attempt's.
        let rejectedEnd = attempts[0]["end_ns"] as? Int ?? 0, replayStart = attempts[1]["start_ns"] as? Int ?? 0
        XCTAssertLessThanOrEqual(rejectedEnd, replayStart)
        XCTAssertEqual((second["events"] as? [[String: Any]])?.map { $0["name"] as? String }, ["token_sidecar.replay"])
        let refetch = try XCTUnwrap(fetches.first { $0["span_id"] as? String != firstFetch["span_id"] as? String })
        XCTAssertEqual((second["links"] as? [[String: Any]])?.map { $0["span_id"] as? String }, [refetch["span_id"] as? String])
        XCTAssertEqual(((first["resource"] as? [String: Any])?["service.name"]) as? String, "orders-sidecar")

        // No token, secret, query or exporter header anywhere in what was exported.
        let exported = String(decoding: try JSONSerialization.data(withJSONObject: all), as: UTF8.self)
        XCTAssertFalse(exported.contains("SENTINEL"), exported)
        XCTAssertFalse(sidecar.text().contains("SENTINEL-HEADER-VALUE"))
        XCTAssertEqual((otlp.jsonLines("requests.jsonl").first?["headers"] as? [String: Any])?["x-api-key"] as? String, "SENTINEL-HEADER-VALUE")
        XCTAssertEqual(otlp.jsonLines("requests.jsonl").first?["content_encoding"] as? String, "gzip")

        // What operators see: the metrics and the status page count the spans, name the endpoint, never a header.
        var exportedCount = 0.0
        var families: [PrometheusTextParser.Family] = []
        let deadline = Date().addingTimeInterval(10)
        repeat {
            families = try PrometheusTextParser.parse(try XCTUnwrap(admin(sidecar.adminPort, "/metrics")).body)
            exportedCount = families.flatMap(\.samples).first { $0.name == "token_sidecar_trace_spans_exported_total" }?.value ?? 0
            if exportedCount < Double(all.count) { Thread.sleep(forTimeInterval: 0.1) }
        } while exportedCount < Double(all.count) && Date() < deadline
        XCTAssertEqual(exportedCount, Double(all.count), "every span the receiver holds is counted as exported")
        let dropped = families.flatMap(\.samples).filter { $0.name == "token_sidecar_trace_spans_dropped_total" }
        XCTAssertEqual(Set(dropped.compactMap { $0.labels["reason"] }), ["queue_full", "export_failed"])
        XCTAssertEqual(dropped.map(\.value).reduce(0, +), 0)
        let status = try XCTUnwrap(admin(sidecar.adminPort, "/", headers: ["Accept: application/json"]))
        let tracing = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any])?["tracing"] as? [String: Any])
        XCTAssertEqual(tracing["enabled"] as? Bool, true)
        XCTAssertEqual(tracing["endpoint"] as? String, "http://127.0.0.1:\(otlp.port)/v1/traces")
        XCTAssertEqual(tracing["spansExported"] as? Int, all.count)
        XCTAssertEqual(tracing["spansDropped"] as? Int, 0)
        let page = try XCTUnwrap(admin(sidecar.adminPort, "/")).body
        XCTAssertTrue(page.contains("<h2>Traces</h2>") && page.contains("/v1/traces"), page)
        XCTAssertFalse(page.contains("SENTINEL") || status.body.contains("SENTINEL"))
    }

    /// A GET to the admin listener.
    private func admin(_ port: Int, _ path: String, headers: [String] = []) -> (status: Int, headers: [String: String], body: String)? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send((["GET \(path) HTTP/1.1", "Host: admin"] + headers).joined(separator: "\r\n") + "\r\n\r\n")
        return client.response()
    }

    /// A failing token server: one error span per attempt, numbered from 1.
    func testAFailingTokenServerGivesAnErrorSpanPerAttempt() throws {
        let otlp = try receiver()
        let tokens = try FixtureServer.tokenServer(["status": 503, "error": "temporarily_unavailable"])
        let backend = try FixtureServer.backend()
        let sidecar = try CapturedSidecar(configPath: try oauthConfig(tokens: tokens, backend: backend), environment: tracingEnvironment(otlp))
        let fetches = spans(otlp, timeout: 20) { $0.filter { $0["name"] as? String == "token fetch" }.count >= 3 }
            .filter { $0["name"] as? String == "token fetch" }
        XCTAssertGreaterThanOrEqual(fetches.count, 3, sidecar.text())
        let ordered = fetches.sorted { ($0["start_ns"] as? Int ?? 0) < ($1["start_ns"] as? Int ?? 0) }
        XCTAssertEqual(ordered.prefix(3).map { attributes($0)["token_sidecar.attempt"] as? Int }, [1, 2, 3])
        for span in ordered {
            XCTAssertEqual((span["status"] as? [String: Any])?["code"] as? String, "STATUS_CODE_ERROR")
            XCTAssertEqual(attributes(span)["token_sidecar.outcome"] as? String, "http_5xx")
            XCTAssertEqual(attributes(span)["http.response.status_code"] as? Int, 503)
            XCTAssertEqual(attributes(span)["token_sidecar.credential"] as? String, "partner")
        }
    }

    /// Tracing off: the app's trace fields reach the backend exactly as sent.
    func testWithTracingOffTheTraceFieldsPassUntouched() throws {
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let sidecar = try CapturedSidecar(configPath: try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)")))
        let fields = ["traceparent: 00-\(appTraceID)-\(appSpanID)-01", "tracestate: congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
                      "baggage: userId=alice,isProduction=false"]
        XCTAssertEqual(get(sidecar.port, "/x", headers: fields)?.status, 200)
        let headers = try XCTUnwrap(requestHeaders(backend).first)
        for field in fields {
            let name = String(field.prefix { $0 != ":" })
            XCTAssertEqual(headers.filter { $0[0].lowercased() == name }.map { "\(name): \($0[1])" }, [field])
        }
        let status = try XCTUnwrap(admin(sidecar.adminPort, "/", headers: ["Accept: application/json"]))
        let tracing = (try JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any])?["tracing"] as? [String: Any]
        XCTAssertEqual(tracing?["enabled"] as? Bool, false)
        let metrics = try XCTUnwrap(admin(sidecar.adminPort, "/metrics")).body
        XCTAssertFalse(metrics.contains("token_sidecar_trace_"), "no trace families while tracing is off")
    }

    /// parentbased_traceidratio at 0.01: about 1% of 10,000 new traces, and the app's flag wins.
    func testRatioSamplingKeepsAboutOnePercentAndHonoursTheAppsFlag() throws {
        let otlp = try receiver()
        let backend = try FixtureServer.backend()
        let sidecar = try CapturedSidecar(configPath: try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)")),
                                          environment: tracingEnvironment(otlp, ["OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                                                                                 "OTEL_TRACES_SAMPLER_ARG": "0.01"]))
        let client = try XCTUnwrap(SimpleClient(port: sidecar.port))
        // Pipelined in rounds of 100: 10,000 requests in seconds, even under a sanitizer.
        for round in 0..<100 {
            client.send(String(repeating: "GET http://api.test/r\(round) HTTP/1.1\r\nHost: api.test\r\n\r\n", count: 100))
            for _ in 0..<100 { XCTAssertEqual(client.response()?.status, 200) }
        }
        for flag in ["01", "00"] {
            for index in 0..<20 {
                let trace = String(format: "%032x", 0xABC000 + index) , span = String(format: "%016x", 0x1000 + index)
                client.send("GET http://api.test/flag\(flag) HTTP/1.1\r\nHost: api.test\r\ntraceparent: 00-\(trace)-\(span)-\(flag)\r\n\r\n")
                XCTAssertEqual(client.response()?.status, 200)
            }
        }
        let all = spans(otlp) { found in found.filter { (self.attributes($0)["url.path"] as? String) == "/flag01" }.count >= 20 }
        Thread.sleep(forTimeInterval: 0.5)
        let servers = otlp.jsonLines("spans.jsonl").filter { $0["kind"] as? String == "SPAN_KIND_SERVER" }
        let sampled = servers.filter { (attributes($0)["url.path"] as? String)?.hasPrefix("/r") == true }.count
        XCTAssertTrue((50...160).contains(sampled), "\(sampled) of 10,000 sampled at 1%")
        XCTAssertEqual(servers.filter { (attributes($0)["url.path"] as? String) == "/flag01" }.count, 20, "a sampled parent is always recorded")
        XCTAssertEqual(servers.filter { (attributes($0)["url.path"] as? String) == "/flag00" }.count, 0, "an unsampled parent never")
        XCTAssertFalse(all.isEmpty)
    }

    /// SIGTERM: the last requests' spans leave with the drain, not a scheduled export later.
    func testSpansQueuedAtSIGTERMAreSentBeforeTheProcessExits() throws {
        let otlp = try receiver()
        let backend = try FixtureServer.backend()
        let sidecar = try SidecarProcess(configPath: try writeConfig(staticRouteConfig(upstream: "http://127.0.0.1:\(backend.port)")),
                                         environment: tracingEnvironment(otlp, ["OTEL_BSP_SCHEDULE_DELAY": "60000"]))
        XCTAssertEqual(get(sidecar.port, "/last-words")?.status, 200)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertTrue(otlp.jsonLines("spans.jsonl").isEmpty, "nothing is sent before the 60 s delay")
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 20), 0)
        let paths = otlp.jsonLines("spans.jsonl").compactMap { attributes($0)["url.path"] as? String }
        XCTAssertEqual(paths, ["/last-words"])
    }
}
