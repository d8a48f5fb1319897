import Foundation
@testable import Proxy
import TestSupport
import XCTest

/// WebSocket through the sidecar with real peers: the `websockets` package's client and server
/// (Python, `make peers-venv`). The backend accepts a handshake only with a token it knows, so
/// every passing handshake proves the injection. The app reaches the sidecar as apps do: an
/// absolute-form handshake (aiohttp, Node's agents), a CONNECT tunnel carrying plaintext
/// (`websockets` itself behind HTTP_PROXY, RFC 6455 §4.1), and `wss://` through an intercepted
/// tunnel (behind HTTPS_PROXY).
final class WebSocketTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private var caFile: String { directory.appendingPathComponent("ca.crt").path }

    /// A proxy whose route `api.test:80` intercepts (so a CONNECT to it carries the app's
    /// plaintext) and sends to `backend`, injecting the static token `abc` (or `credential`).
    private func proxy(_ backend: WebSocketBackend, route: String = "", timeouts: String = "{}", credential: String? = nil,
                       accessLog: AccessRecords? = nil) throws -> ProxyHarness {
        try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            timeouts: \(timeouts)
            intercept: {caCertFile: "\(caFile)"}
            credentials:
              api: \(credential ?? "{type: static, token: abc}")
            routes:
              - host: "api.test:80"
                intercept: true
                upstream: "http://127.0.0.1:\(backend.port)"
                credential: api
            \(route.isEmpty ? "" : "    " + route)
            """, accessLog: accessLog)
    }

    private func assertOK(_ result: [String: Any], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result["ok"] as? Bool, true, "\(what): \(result.filter { $0.key != "subprotocol_headers" })",
                       file: file, line: line)
    }

    func testMessagesBigMessagesPingsAndClosesBehindHTTPProxy() throws {
        let backend = try WebSocketBackend(accept: ["abc"])
        let proxy = try proxy(backend)
        for how in ["absolute", "connect"] {
            for scenario in ["messages", "big", "ping", "close-client", "close-server"] {
                let result = try WebSocketClient.run(proxyPort: proxy.port, url: "ws://api.test/ws", how: how, scenario: scenario)
                assertOK(result, "\(how) \(scenario)")
                let headers = result["subprotocol_headers"] as? [String: String] ?? [:]
                XCTAssertEqual(headers["via"], "1.1 token-sidecar", "\(how) \(scenario)")
            }
        }
        let handshakes = backend.handshakes()
        XCTAssertEqual(handshakes.count, 10)
        for handshake in handshakes {
            XCTAssertEqual(handshake["authorization"] as? [String], ["Bearer abc"], "exactly one injected token")
            XCTAssertEqual(handshake["upgrade"] as? [String], ["websocket"])
            XCTAssertEqual(handshake["status"] as? Int, 101)
        }
        // The app's close reaches the backend with its code (4000), once per way of reaching us.
        XCTAssertTrue(eventually { backend.closeCodes().filter { $0 == 4000 }.count == 2 }, "\(backend.closeCodes())")
    }

    func testWSSThroughAnInterceptedTunnel() throws {
        let ca = try TestCA()
        let backend = try WebSocketBackend(accept: ["abc"], tlsCert: ca.localhostCert, tlsKey: ca.localhostKey)
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: "\(caFile)"}
            credentials:
              api: {type: static, token: abc}
            routes:
              - host: "localhost:\(backend.port)"
                intercept: true
                credential: api
                caFile: "\(ca.caCert)"
            """)
        for scenario in ["messages", "big", "ping", "close-client", "close-server"] {
            let result = try WebSocketClient.run(proxyPort: proxy.port, url: "wss://localhost:\(backend.port)/ws", how: "connect",
                                                 scenario: scenario, cafile: caFile)
            assertOK(result, "wss \(scenario)")
        }
        let handshakes = backend.handshakes()
        XCTAssertEqual(handshakes.count, 5)
        XCTAssertTrue(handshakes.allSatisfy { $0["authorization"] as? [String] == ["Bearer abc"] }, "\(handshakes)")
        XCTAssertTrue(eventually { backend.closeCodes().contains(4000) })
    }

    /// 64 MiB pushed at a client that reads nothing for 3 s: the tunnel stops reading the
    /// backend at its high watermark, so this process grows by far less than what was sent.
    func testAClientThatStopsReadingHoldsBoundedMemory() throws {
        let backend = try WebSocketBackend(accept: ["abc"])
        let proxy = try proxy(backend)
        let before = Self.residentBytes()
        let output = directory.appendingPathComponent("client.out")
        let client = try WebSocketClient.start(proxyPort: proxy.port, url: "ws://api.test/ws", how: "connect",
                                               scenario: "slow-read", output: output)
        defer { if client.isRunning { client.terminate() } }
        XCTAssertTrue(eventually(timeout: .seconds(15)) { ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("STALLED") })
        Thread.sleep(forTimeInterval: 1)
        let grown = Self.residentBytes() - before
        XCTAssertLessThan(grown, 24 << 20, "the sidecar held \(grown >> 20) MiB of a 64 MiB flood")
        XCTAssertTrue(eventually(timeout: .seconds(60)) { !client.isRunning })
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        XCTAssertTrue(text.contains("\"ok\": true") && text.contains("\"received\": 67108864"), text.suffix(500).description)
    }

    /// A token revoked at the backend: the next handshake gets 401, the sidecar fetches a new
    /// token once and replays the handshake, and the app connects.
    func testARevokedTokenHandshakeSucceedsAfterOneRefetch() throws {
        let tokens = try TokenServer()
        let backend = try WebSocketBackend()
        let proxy = try proxy(backend, credential: """
            {type: oauth2, tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token", clientId: c, secret: s}
            """)
        assertOK(try WebSocketClient.run(proxyPort: proxy.port, url: "ws://api.test/ws", how: "connect", scenario: "handshake"),
                 "first")
        try backend.revoke(["tok-1"])
        assertOK(try WebSocketClient.run(proxyPort: proxy.port, url: "ws://api.test/ws", how: "connect", scenario: "ping"),
                 "after the revocation")
        let handshakes = backend.handshakes()
        XCTAssertEqual(handshakes.map { $0["status"] as? Int }, [101, 401, 101])
        XCTAssertEqual(handshakes.map { ($0["authorization"] as? [String])?.first }, ["Bearer tok-1", "Bearer tok-1", "Bearer tok-2"])
        XCTAssertEqual(tokens.requests().count, 2, "one fetch at start, one for the revocation")
    }

    func testTheIdleTimeoutAndTheLifetimeEndUpgradedConnections() throws {
        let backend = try WebSocketBackend(accept: ["abc"])
        let idle = try proxy(backend, timeouts: "{upgradedIdle: 1s}")
        let quiet = try WebSocketClient.run(proxyPort: idle.port, url: "ws://api.test/ws", how: "connect", scenario: "idle")
        assertOK(quiet, "idle")
        XCTAssertLessThan(quiet["closed_after"] as? Double ?? 99, 3)

        let limited = try proxy(backend, route: "maxUpgradedLifetime: 1s")
        let ended = try WebSocketClient.run(proxyPort: limited.port, url: "ws://api.test/ws", how: "absolute", scenario: "lifetime")
        assertOK(ended, "lifetime")
        XCTAssertEqual(ended["received_code"] as? Int, 1001)
        XCTAssertGreaterThan(ended["received"] as? Int ?? 0, 0, "messages flowed until then, none damaged")
        XCTAssertLessThan(ended["closed_after"] as? Double ?? 99, 3)
    }

    /// curl's `--http2` over plain http sends `Upgrade: h2c`: served as HTTP/1.1, the upgrade
    /// never reaches the backend.
    func testAnH2CUpgradeNeverReachesTheBackend() throws {
        let echo = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: echo.port))
        let result = try Curl.run(["-si", "--http2", "--proxy", "http://127.0.0.1:\(proxy.port)", "http://api.test/h2c"])
        XCTAssertTrue(result.out.hasPrefix("HTTP/1.1 200"), result.out)
        let request = try XCTUnwrap(echo.requests().last)
        XCTAssertEqual(Backend.headerValues(request, "Upgrade"), [])
        XCTAssertEqual(Backend.headerValues(request, "HTTP2-Settings"), [])
        XCTAssertFalse(Backend.headerValues(request, "Connection").joined().lowercased().contains("upgrade"))
    }

    func testAnUpgradedConnectionIsCountedAndLoggedWhenItEnds() throws {
        let backend = try WebSocketBackend(accept: ["abc"])
        let records = AccessRecords()
        let proxy = try proxy(backend, accessLog: records)
        assertOK(try WebSocketClient.run(proxyPort: proxy.port, url: "ws://api.test/ws", how: "connect", scenario: "big"), "big")
        XCTAssertTrue(eventually { records.all.contains { $0.status == 101 } })
        let record = try XCTUnwrap(records.all.first { $0.status == 101 })
        XCTAssertEqual(record.path, "/ws")
        XCTAssertGreaterThan(record.bytesIn, 16 << 20, "the app's bytes, frames included")
        XCTAssertGreaterThan(record.bytesOut, 16 << 20)
        XCTAssertEqual(record.tokenFingerprint?.isEmpty, false)
        XCTAssertTrue(eventually { proxy.metrics().upgradedOpen["api.test:80"] == nil })
        let metrics = proxy.metrics()
        XCTAssertEqual(metrics.upgradedConnections["api.test:80"], 1)
        XCTAssertEqual(metrics.requests[RequestCounterKey(route: "api.test:80", code: 101)], 1)
    }

    /// A tunnel to a route that sends plaintext upstream (`http://`, port 80) carries no TLS: an
    /// app that starts a handshake there is closed (it would be weaker than its own connection),
    /// and one that leaves without a byte is counted like a refused handshake.
    func testAPlaintextRouteRefusesTLSInItsTunnel() throws {
        let backend = try WebSocketBackend(accept: ["abc"])
        let proxy = try proxy(backend)
        let tls = try RawClient(port: proxy.port)
        tls.send("CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\n")
        XCTAssertEqual(try tls.readResponse(head: true).status, 200)
        tls.send([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
        let sent = Date()
        // Closed at once (with a reset: the ClientHello is left unread), nothing answered.
        XCTAssertEqual(tls.readAll(), [], "a ClientHello on a plaintext route is refused")
        XCTAssertLessThan(Date().timeIntervalSince(sent), 5, "at once, not at timeouts.clientHeader")

        let gone = try RawClient(port: proxy.port)
        gone.send("CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\n")
        XCTAssertEqual(try gone.readResponse(head: true).status, 200)
        gone.close()
        XCTAssertTrue(eventually { proxy.server.interceptHandshakeFailures()[InterceptFailureKey(host: "api.test", reason: "closed")] == 1 },
                      "\(proxy.server.interceptHandshakeFailures())")
        XCTAssertEqual(backend.handshakes().count, 0)
    }

    // MARK: - helpers

    /// This process's resident set (the in-process proxy's memory with the test's own).
    private static func residentBytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
}
