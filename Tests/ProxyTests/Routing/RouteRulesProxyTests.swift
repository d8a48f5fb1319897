import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A route's rules end to end, with curl as the app over HTTP/1.1 (absolute-form through the
/// proxy) and HTTP/2 (h2c prior knowledge): allowed requests reach the backend with the
/// normalized path and the token; denied and ambiguous ones are refused with `Proxy-Status`
/// and reach nothing.
final class RouteRulesProxyTests: XCTestCase {
    private var backend: Backend!
    private var proxy: ProxyHarness!

    override func setUpWithError() throws {
        backend = try Backend()
        proxy = try ProxyHarness(yaml: config("""
                rules:
                  - {name: read-orders, methods: [GET, HEAD], paths: ["/v1/orders/**"]}
                  - {name: create-order, methods: [POST], paths: ["/v1/orders"]}
            """))
    }

    /// One route to the backend with a static token and `policy` (its rules, its enforcement).
    private func config(_ policy: String) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          partner: {type: static, token: rules-token}
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        \(policy)
        """
    }

    override func tearDown() {
        proxy = nil
        backend = nil
    }

    /// curl through the proxy: the status and `Proxy-Status`. Only an allowed POST sends a body:
    /// curl 7.88 reports a refusal that comes before its upload ended (and the RST_STREAM
    /// NO_ERROR RFC 9113 §8.1 prescribes after it) as an HTTP/2 framing error.
    private func curl(_ method: String, _ path: String, http2: Bool, body: Bool = false, headers: [String] = [],
                      host: String = "api.test") throws -> (status: Int, proxyStatus: String) {
        var command = ["curl", "-sS", "-o", "/dev/null", "-D", "-", "--path-as-is", "-X", method] + headers.flatMap { ["-H", $0] }
        if http2 {
            command += ["--http2-prior-knowledge", "--connect-to", "\(host):80:127.0.0.1:\(proxy.port)"]
        } else {
            command += ["--proxy", "http://127.0.0.1:\(proxy.port)"]
        }
        if body { command += ["--data-binary", "{}"] }
        let outcome = try Command.run(command + ["http://\(host)\(path)"])
        let lines = outcome.out.split(separator: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let proxyStatus = lines.first { $0.lowercased().hasPrefix("proxy-status:") }.map { String($0.dropFirst(13)) } ?? outcome.err
        return (status, proxyStatus)
    }

    func testEachDecisionOverHTTP1AndHTTP2() throws {
        for http2 in [false, true] {
            let over = http2 ? "HTTP/2" : "HTTP/1.1"
            let before = backend.requests().count
            XCTAssertEqual(try curl("GET", "/v1//orders/./7/../8?q=%2F", http2: http2).status, 200, over)
            XCTAssertEqual(try curl("POST", "/v1/orders", http2: http2, body: true).status, 200, over)
            let seen = backend.requests().suffix(from: before)
            XCTAssertEqual(seen.compactMap { $0["target"] as? String }, ["/v1/orders/8?q=%2F", "/v1/orders"], "\(over): the normalized path goes upstream")
            XCTAssertTrue(seen.allSatisfy { Backend.headerValues($0, "authorization") == ["Bearer rules-token"] }, over)

            let refusals: [(String, String, Int, String)] = [
                ("POST", "/v1/orders/8", 403, "no rule allows POST /v1/orders/8"),
                ("GET", "/v1/orders/../../admin", 403, "no rule allows GET /admin"),
                ("DELETE", "/v1/orders", 403, "no rule allows DELETE /v1/orders"),
                ("GET", "/v1/orders/..%2Fadmin", 400, "encoded / or"),
                ("GET", "/v1/orders/..;/admin", 400, "dot segment with ; parameters"),
                ("GET", "/v1/orders/%2e%2e/admin", 400, "encoded dot segment"),
            ]
            let counted = backend.requests().count
            for (method, path, status, reason) in refusals {
                let answer = try curl(method, path, http2: http2)
                XCTAssertEqual(answer.status, status, "\(over) \(method) \(path)")
                XCTAssertTrue(answer.proxyStatus.contains("token-sidecar; error=") && answer.proxyStatus.contains(reason),
                              "\(over) \(method) \(path): \(answer.proxyStatus)")
                XCTAssertTrue(answer.proxyStatus.contains("route api.test:80"), answer.proxyStatus)
            }
            XCTAssertEqual(backend.requests().count, counted, "\(over): nothing refused reached the backend")
        }
    }

    /// The edges of a checked request: a head split into single bytes (the path checked whole,
    /// once, when the head completes), a refusal pipelined behind it (answered, the connection
    /// kept), a body that overruns its length (the rest is the next request, refused as
    /// malformed), and an app that leaves mid-head (nothing forwarded).
    func testASplitPipelinedOverrunOrAbandonedRequestIsCheckedWhole() throws {
        let before = backend.requests().count
        let client = try RawClient(port: proxy.port)
        let allowed = "GET http://api.test/v1//orders/./7?q=1 HTTP/1.1\r\nHost: api.test\r\n\r\n"
        for byte in Array(allowed.utf8) { client.send([byte]) }
        XCTAssertEqual(try client.readResponse().status, 200)
        client.send("POST http://api.test/v1/admin HTTP/1.1\r\nHost: api.test\r\nContent-Length: 0\r\n\r\n"
                    + "GET http://api.test/v1/orders/9 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let refused = try client.readResponse()
        XCTAssertEqual(refused.status, 403)
        XCTAssertTrue(refused.header("proxy-status")?.contains("no rule allows POST /v1/admin") ?? false)
        XCTAssertEqual(try client.readResponse().status, 200, "the pipelined request after the refusal is served")
        client.send("POST http://api.test/v1/orders HTTP/1.1\r\nHost: api.test\r\nContent-Length: 2\r\n\r\n{}XYZ garbage\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(try client.readResponse().status, 400, "the overrun is the next request: malformed")
        XCTAssertEqual(backend.requests().suffix(from: before).compactMap { $0["target"] as? String },
                       ["/v1/orders/7?q=1", "/v1/orders/9", "/v1/orders"], "whole, normalized, and nothing refused")

        let leaving = try RawClient(port: proxy.port)
        leaving.send("GET http://api.test/v1/orders/../../admin HTTP/1.1\r\nHost: api.te")
        leaving.close(reset: true)
        let dropped = try RawClient(port: proxy.port)
        dropped.send("GET http://api.test/v1/orders/1 HTTP/1.1\r\nHost: api.test\r\n")
        dropped.close()
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(backend.requests().count, before + 3, "a head the app never finished is never forwarded")
        let after = try RawClient(port: proxy.port)
        after.send("GET http://api.test/v1/orders/2 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try after.readResponse().status, 200, "the proxy still serves")
    }

    func testAuditModeChangesNoResponse() throws {
        proxy = try ProxyHarness(yaml: config("""
                enforcement: audit
                rules:
                  - {name: read-orders, methods: [GET], paths: ["/v1/orders/**"]}
            """))
        for http2 in [false, true] {
            XCTAssertEqual(try curl("DELETE", "/v1/admin", http2: http2).status, 200)
            XCTAssertEqual(try curl("GET", "/v1//orders/./1", http2: http2).status, 200)
        }
        XCTAssertEqual(backend.requests().compactMap { $0["target"] as? String }.suffix(2), ["/v1/admin", "/v1//orders/./1"],
                       "sent exactly as the app sent them")
    }

    /// `audit:` writes one JSON line per request that used the credential and per refusal, over
    /// HTTP/1.1 and HTTP/2 alike: the decision, the rule, the normalized path without its query,
    /// the app's trace id; never the token or the query. Counted per route, credential, decision.
    func testAuditRecordsOneLinePerRequestAndNoSecret() throws {
        let file = auditFilePath()
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            audit: {file: "\(file)"}
            credentials:
              partner: {type: static, token: SENTINEL-AUDIT-TOKEN}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(backend.port)"
                credential: partner
                rules:
                  - {name: read-orders, methods: [GET], paths: ["/v1/orders/**"]}
              - host: "audit.test"
                upstream: "http://127.0.0.1:\(backend.port)"
                credential: partner
                enforcement: audit
                rules:
                  - {name: read-orders, methods: [GET], paths: ["/v1/orders/**"]}
              - host: "plain.test"
                upstream: "http://127.0.0.1:\(backend.port)"
                credential: partner
            """)
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let traceparent = "traceparent: 00-\(traceID)-00f067aa0ba902b7-01"
        for http2 in [false, true] {
            XCTAssertEqual(try curl("GET", "/v1//orders/7?key=SENTINEL-AUDIT-QUERY", http2: http2, headers: [traceparent]).status, 200)
            XCTAssertEqual(try curl("DELETE", "/v1/orders/7", http2: http2).status, 403)
            XCTAssertEqual(try curl("GET", "/v1/orders/..%2Fadmin", http2: http2).status, 400)
            XCTAssertEqual(try curl("DELETE", "/v1/admin?x=1", http2: http2, host: "audit.test").status, 200, "audit mode changes nothing")
            XCTAssertEqual(try curl("GET", "/anything?token=SENTINEL-AUDIT-QUERY", http2: http2, host: "plain.test").status, 200)
        }
        let records = auditRecords(file, count: 10)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertFalse(text.contains("SENTINEL-AUDIT"), "no token, no query in audit records")
        XCTAssertEqual(records.count, 10, "one parsable line per request: \(text)")
        XCTAssertEqual(text.split(separator: "\n").count, 10)
        for (index, protocolName) in ["HTTP/1.1", "HTTP/2"].enumerated() {
            let batch = Array(records[(index * 5)..<(index * 5 + 5)])
            XCTAssertEqual(batch.map { $0["protocol"] as? String }, Array(repeating: protocolName, count: 5))
            XCTAssertEqual(batch.map { $0["decision"] as? String }, ["allowed", "denied", "denied", "audited", "allowed"], protocolName)
            XCTAssertEqual(batch.map { $0["status"] as? Int }, [200, 403, 400, 200, 200], protocolName)
            XCTAssertEqual(batch.map { $0["path"] as? String }, ["/v1/orders/7", "/v1/orders/7", "/v1/orders/..%2Fadmin", "/v1/admin", "/anything"])
            XCTAssertEqual(batch.map { $0["rule"] as? String }, ["read-orders", nil, nil, nil, nil])
            XCTAssertEqual(batch.map { $0["reason"] as? String }, [nil, "no_rule", "ambiguous_path", "no_rule", nil])
            XCTAssertEqual(batch.map { $0["route"] as? String }, ["api.test:80", "api.test:80", "api.test:80", "audit.test:80", "plain.test:80"])
            XCTAssertEqual(batch.map { $0["credential"] as? String }, Array(repeating: "partner", count: 5))
            XCTAssertEqual(batch.map { $0["placement"] as? String }, ["header:authorization", nil, nil, "header:authorization", "header:authorization"])
            XCTAssertEqual(batch[0]["trace_id"] as? String, traceID, "the app's trace id, tracing off")
            XCTAssertTrue(batch[1]["trace_id"] is NSNull)
            XCTAssertEqual(batch[0]["method"] as? String, "GET")
            XCTAssertEqual(batch[0]["authority"] as? String, "api.test")
            XCTAssertNotNil(batch[0]["time"] as? String)
            XCTAssertGreaterThan(batch[0]["bytes_out"] as? Int ?? 0, 0)
        }
        let decisions = proxy.metrics().policyDecisions
        XCTAssertEqual(decisions[PolicyDecisionKey(route: "api.test:80", credential: "partner", decision: "allowed")], 2)
        XCTAssertEqual(decisions[PolicyDecisionKey(route: "api.test:80", credential: "partner", decision: "denied")], 4)
        XCTAssertEqual(decisions[PolicyDecisionKey(route: "audit.test:80", credential: "partner", decision: "audited")], 2)
        XCTAssertEqual(decisions[PolicyDecisionKey(route: "plain.test:80", credential: "partner", decision: "allowed")], 2)
    }
}
