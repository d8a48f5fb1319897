import EventLoop
import Foundation
import TestSupport
import XCTest
import Proxy

/// Apps that speak HTTP/2 to the proxy, with real clients (curl, nghttp from nghttp2's tools)
/// and nginx behind it speaking HTTP/1.1: h2c with prior knowledge on the listener, and `h2`
/// chosen by ALPN inside an intercepted tunnel. Every stream is a request like any other.
final class HTTP2AppTests: XCTestCase {
    private static let echo = #"location / { return 200 "auth=$http_authorization host=$host\n"; }"#
    private static let upload = #"location /upload { client_max_body_size 10m; proxy_pass http://127.0.0.1:$server_port/sink; } location /sink { return 200 "got=$content_length\n"; }"#

    private var directories: [URL] = []

    override func tearDown() {
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
    }

    /// A proxy with one intercepting route for `host` (static token `abc`, `routeKey` added to
    /// the route); returns it and the file its CA certificate was written to.
    private func interceptingProxy(host: String, routeKey: String) throws -> (ProxyHarness, caFile: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h2-intercept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        directories.append(directory)
        let caFile = directory.appendingPathComponent("ca.crt").path
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(caFile)}
            credentials:
              api: {type: static, token: "abc"}
            routes:
              - host: "\(host)"
                intercept: true
                credential: api
                \(routeKey)
            """)
        return (proxy, caFile)
    }

    /// The number a raw client's output ends with (a GOAWAY's last stream); 0 if none.
    private static func lastNumber(_ out: String) -> Int {
        Int(out.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
    }

    /// Runs the hand-made HTTP/2 client (Fixtures/h2_raw_client.py) against `proxy`.
    private func rawClient(_ proxy: ProxyHarness, _ arguments: String...) throws -> Command.Outcome {
        try Command.run(["python3", Backend.fixtures.appendingPathComponent("h2_raw_client.py").path, String(proxy.port)] + arguments,
                        timeout: 30)
    }

    func testCurlWithPriorKnowledgeGetsTheToken() throws {
        // (One URL per curl: curl 7.88 fails a second request on a reused h2c connection with
        // "Error in the HTTP2 framing layer" against nginx too; nghttp below multiplexes.)
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try Curl.run(["--http2-prior-knowledge", "-H", "Host: api.test", "-H", "Authorization: Bearer app-own",
                                   "-w", "%{http_version}\n", "http://127.0.0.1:\(proxy.port)/a"])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out, "auth=Bearer abc host=127.0.0.1\n2\n")
        let lines = nginx.waitForLogLines(1)
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"Bearer abc\"") && !$0.contains("app-own") }, "\(lines)")
    }

    /// `Via` names the protocol the request came in (RFC 9110 §7.6.3): `2` for an HTTP/2 app's
    /// stream, `1.1` and `1.0` for those versions' requests, all to the same HTTP/1.1 backend.
    func testViaNamesTheProtocolEachRequestCameIn() throws {
        let nginx = try Nginx(locations: #"location / { return 200 "via=$http_via\n"; }"#)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let url = "http://127.0.0.1:\(proxy.port)/v"
        for (flag, via) in [("--http2-prior-knowledge", "2"), ("--http1.1", "1.1"), ("--http1.0", "1.0")] {
            let result = try Curl.run([flag, "-H", "Host: api.test", url])
            XCTAssertEqual(result.status, 0, result.err)
            XCTAssertEqual(result.out, "via=\(via) token-sidecar\n", flag)
        }
    }

    func testFiftyConcurrentStreamsFromNghttpEachCarryExactlyTheInjectedToken() throws {
        let nginx = try Nginx(locations: Self.echo)
        let records = AccessRecords()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port), accessLog: records)
        let result = try Command.run(["nghttp", "-n", "-m", "50", "-H", ":authority: api.test", "-H", "authorization: Bearer app-own",
                                      "-v", "http://127.0.0.1:\(proxy.port)/many"], timeout: 30)
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out.components(separatedBy: ":status: 200").count - 1, 50, result.out.suffix(2000).description)
        let lines = nginx.waitForLogLines(50)
        XCTAssertEqual(lines.count, 50)
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"Bearer abc\"") && $0.contains("GET /many HTTP/1.1") }, "\(lines.prefix(3))")
        // One access record per stream, saying HTTP/2, with the token's fingerprint.
        var logged: [AccessRecord] = []
        for _ in 0..<100 where logged.count < 50 {
            logged = records.all
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(logged.count, 50)
        XCTAssertEqual(proxy.metrics().requests[RequestCounterKey(route: "api.test:80", code: 200, http2: true)], 50,
                       "counted with protocol=\"h2\"")
        for record in logged {
            XCTAssertEqual(record.protocolName, "HTTP/2")
            XCTAssertEqual(record.status, 200)
            XCTAssertEqual(record.auth, .injected)
            XCTAssertNotNil(record.tokenFingerprint)
        }
    }

    func testConcurrentStreamsEachGetTheirOwnResponseHead() throws {
        // Response heads of many streams are read in one poll and go out later: each stream's
        // fields (kept in storage the worker reuses) must be its own.
        let nginx = try Nginx(locations: #"location /each/ { add_header X-Path $uri; add_header X-Long $uri$uri$uri$uri; return 200 "$uri\n"; }"#)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let paths = (0..<40).map { "/each/\($0)-" + String(repeating: "x", count: $0 * 7) }
        let result = try Command.run(["nghttp", "-n", "-v", "-m", "1", "-H", ":authority: api.test"]
                                         + paths.map { "http://127.0.0.1:\(proxy.port)\($0)" }, timeout: 30)
        XCTAssertEqual(result.status, 0, result.err)
        var seen: [String: String] = [:]
        var stream = ""
        for line in result.out.split(separator: "\n") {
            if let range = line.range(of: "recv HEADERS frame <length=") {
                let id = line[range.upperBound...].components(separatedBy: "stream_id=").last ?? ""
                stream = String(id.prefix { $0.isNumber })
            } else if let range = line.range(of: "x-path: ") {
                seen[stream] = String(line[range.upperBound...])
            } else if let range = line.range(of: "x-long: "), let path = seen[stream] {
                XCTAssertEqual(String(line[range.upperBound...]), String(repeating: path, count: 4), "stream \(stream)")
            }
        }
        XCTAssertEqual(Set(seen.values), Set(paths), "each path's head once, on its stream")
        XCTAssertEqual(seen.count, paths.count)
    }

    func testStreamsOfABusyConnectionGetLongHeadsAndLargeBodiesWhole() throws {
        // With more than 4 streams open, a stream reads its backend's response in 16 KiB steps
        // (the no-read attack's defence): a head longer than a step (30 KB of one field) must
        // still be read whole, and each 1 MiB body must arrive whole, on every stream.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h2-busy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data((0..<(1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }).write(to: directory.appendingPathComponent("big"))
        let thousand = String(repeating: "b", count: 1000)
        let nginx = try Nginx(locations: #"location /busy/ { alias "# + directory.path + #"/; set $a ""# + thousand + #""; "#
                                  + "add_header X-Big " + String(repeating: "$a", count: 30) + "; }")
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let urls = (0..<8).map { "http://127.0.0.1:\(proxy.port)/busy/big?\($0)" }
        let result = try Command.run(["nghttp", "-n", "-v", "-H", ":authority: api.test"] + urls, timeout: 60)
        XCTAssertEqual(result.status, 0, result.err)
        var dataPerStream: [String: Int] = [:]
        var bigHeads = 0
        var okHeads = 0
        for line in result.out.split(separator: "\n") {
            if let range = line.range(of: "recv DATA frame <length="), let id = line.components(separatedBy: "stream_id=").last {
                let length = Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
                dataPerStream[String(id.prefix { $0.isNumber }), default: 0] += length
            } else if line.contains("x-big: ") {
                XCTAssertEqual(line.components(separatedBy: "x-big: ").last?.count, 30_000)
                bigHeads += 1
            } else if line.contains(":status: 200") {
                okHeads += 1
            }
        }
        XCTAssertEqual(okHeads, 8, result.out.suffix(2000).description)
        XCTAssertEqual(bigHeads, 8)
        XCTAssertEqual(dataPerStream.count, 8)
        XCTAssertEqual(Set(dataPerStream.values), [1024 * 1024], "every body whole")
    }

    func testAnUnroutedHostOverHTTP2GetsTheSameRefusalAsOverHTTP1() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try Curl.run(["-i", "--http2-prior-knowledge", "-H", "Host: other.test", "http://127.0.0.1:\(proxy.port)/x"])
        XCTAssertTrue(result.out.hasPrefix("HTTP/2 403 "), result.out + result.err)
        XCTAssertTrue(result.out.contains("proxy-status: token-sidecar; error=http_request_denied"), result.out)
        XCTAssertTrue(result.out.contains("\"error\": \"http_request_denied\""), result.out)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines(), [], "nothing reached any server")
    }

    func testABodyWithAndWithoutALengthArrivesWhole() throws {
        let nginx = try Nginx(locations: Self.upload)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let body = Data((0..<(1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) })
        // --data-binary sends a content-length; -T - from standard input does not (chunked upstream).
        let sized = try Curl.run(["--http2-prior-knowledge", "-H", "Host: api.test", "--data-binary", "@-",
                                  "http://127.0.0.1:\(proxy.port)/upload"], stdin: body)
        XCTAssertEqual(sized.out, "got=1048576\n", sized.err)
        let streamed = try Curl.run(["--http2-prior-knowledge", "-H", "Host: api.test", "-T", "-",
                                     "http://127.0.0.1:\(proxy.port)/upload"], stdin: body)
        XCTAssertEqual(streamed.status, 0, streamed.err)
        let lines = nginx.waitForLogLines(4)
        XCTAssertTrue(lines.contains { $0.contains("PUT /upload HTTP/1.1") && $0.contains("\"Bearer abc\"") }, "\(lines)")
    }

    func testCurlSpeaksHTTP2InAnInterceptedTunnelToAnHTTP1Upstream() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey,
                              locations: Self.echo + " " + Self.upload.replacingOccurrences(of: "http://127.0.0.1", with: "https://127.0.0.1"))
        let (proxy, caFile) = try interceptingProxy(host: "localhost:\(nginx.port)", routeKey: "caFile: \(ca.caCert)")
        let base = "https://localhost:\(nginx.port)"
        let result = try Curl.run(["-v", "--http2", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                                   "-H", "Authorization: Bearer app-own", "-w", "%{http_version}\n", "\(base)/a"])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.err.contains("ALPN: server accepted h2"), result.err)
        XCTAssertEqual(result.out, "auth=Bearer abc host=localhost\n2\n")
        let body = Data((0..<(1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let upload = try Curl.run(["--http2", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                                   "--data-binary", "@-", "-w", "%{http_version}\n", "\(base)/upload"], stdin: body)
        XCTAssertEqual(upload.out, "got=1048576\n2\n", upload.err)
        let lines = nginx.waitForLogLines(3)
        let appRequests = lines.filter { !$0.contains("/sink") }
        XCTAssertEqual(appRequests.count, 2, "\(lines)")
        XCTAssertTrue(appRequests.allSatisfy { $0.contains("\"Bearer abc\"") }, "one token per app request: \(lines)")
        XCTAssertFalse(lines.contains { $0.contains("app-own") })
    }

    func testUpgradeToH2cIsIgnoredAndTheRequestAnsweredOverHTTP1() throws {
        let nginx = try Nginx(locations: #"location / { return 200 "upgrade=[$http_upgrade] auth=$http_authorization\n"; }"#)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try Curl.run(["-i", "--http2", "-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/u"])
        XCTAssertTrue(result.out.hasPrefix("HTTP/1.1 200 "), result.out + result.err)
        XCTAssertTrue(result.out.hasSuffix("upgrade=[] auth=Bearer abc\n"), result.out)
    }

    func testH2cInsideAPlaintextTunnelGetsTheTokenAndTLSThereIsRefused() throws {
        // A plaintext gRPC app's shape: grpc_proxy=http://sidecar, target orders.internal:<port>,
        // h2c with prior knowledge inside the CONNECT tunnel; the route's upstream is http://.
        let nginx = try Nginx(locations: Self.echo)
        let (proxy, caFile) = try interceptingProxy(host: "orders.internal:\(nginx.port)",
                                                    routeKey: "upstream: \"http://127.0.0.1:\(nginx.port)\"")
        let url = "http://orders.internal:\(nginx.port)/rpc"
        let result = try Curl.run(["-p", "-x", "http://127.0.0.1:\(proxy.port)", "--http2-prior-knowledge",
                                   "-H", "Authorization: Bearer app-own", "-w", "%{http_version}\n", url])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out, "auth=Bearer abc host=127.0.0.1\n2\n")
        // The app's TLS in a tunnel whose route sends plaintext: refused, nothing forwarded.
        let tls = try Curl.run(["-p", "-x", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                                "https://orders.internal:\(nginx.port)/tls"])
        XCTAssertNotEqual(tls.status, 0)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines().count, 1, "only the h2c request reached nginx")
    }

    func testAGRPCCallFailsClosedWithUnavailableAndNothingGoesUpstream() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try Command.run(["nghttp", "-v", "-H", ":authority: api.test", "-H", "content-type: application/grpc",
                                      "-H", "te: trailers", "-d", "/dev/null", "http://127.0.0.1:\(proxy.port)/orders.Orders/Get"], timeout: 30)
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.out.contains(":status: 200"), result.out)
        XCTAssertTrue(result.out.contains("grpc-status: 14"), result.out)
        XCTAssertTrue(result.out.contains("grpc-message: the route's upstream speaks HTTP/1.1"), result.out)
        XCTAssertTrue(result.out.contains("proxy-status: token-sidecar; error=http_protocol_error"), result.out)
        // gRPC-Web is made for HTTP/1.1: it goes through.
        let web = try Command.run(["nghttp", "-H", ":authority: api.test", "-H", "content-type: application/grpc-web+proto",
                                   "http://127.0.0.1:\(proxy.port)/web"], timeout: 30)
        XCTAssertEqual(web.out, "auth=Bearer abc host=127.0.0.1\n", web.err)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines().count, 1, "only the gRPC-Web request reached nginx")
    }

    // MARK: - hostile and broken apps (a hand-made HTTP/2 client, Fixtures/h2_raw_client.py)

    func testAStreamResetMidResponseDoesNotDisturbTheNextStreamOnItsConnection() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-big-\(UUID().uuidString)")
        try Data(repeating: 0x62, count: 8 * 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let nginx = try Nginx(locations: "location /files/ { alias \(FileManager.default.temporaryDirectory.path)/; } " + Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", "reset", "/files/\(file.lastPathComponent)", "/small")
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.out.contains("small-status 200\n"), result.out)
        XCTAssertTrue(result.out.contains("small-body auth=Bearer abc host=127.0.0.1"), result.out)
        let lines = nginx.waitForLogLines(2)
        XCTAssertEqual(lines.count, 2, "\(lines)")
    }

    func testABackendThatBreaksItsResponseFailsOnlyThatStreamAtEachPhase() throws {
        // The response head goes to the codec as fields (not text): what a broken backend does
        // after it, or instead of a body, must still reach the app as HTTP/2 says.
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        func get(_ path: String, _ extra: [String] = []) throws -> (status: Int32, out: String, err: String) {
            try Curl.run(["--http2-prior-knowledge", "-H", "Host: api.test", "-w", "\n%{http_code}"] + extra
                         + ["http://127.0.0.1:\(proxy.port)\(path)"])
        }
        // A chunked body malformed from its start: the held head is dropped for a clean 502.
        let bad = try get("/bad-chunk-size", ["-D", "-"])
        XCTAssertEqual(bad.status, 0, bad.err)
        XCTAssertTrue(bad.out.hasSuffix("\n502"), bad.out)
        XCTAssertTrue(bad.out.lowercased().contains("proxy-status:"), bad.out)
        // Malformed after its first chunk (sent 0.3 s later, in a read of its own), or closed
        // short of its length: the stream is reset, never ended as if complete.
        for path in ["/bad-chunk-late", "/short-cl-close"] {
            let cut = try get(path)
            XCTAssertNotEqual(cut.status, 0, "\(path): \(cut.out)")
        }
        // Bodies a head's status or method rules out end with the head; the stray bytes go nowhere.
        let head = try get("/head-with-body", ["-I"])
        XCTAssertEqual(head.status, 0, head.err)
        XCTAssertTrue(head.out.hasPrefix("HTTP/2 200"), head.out)
        let noContent = try get("/204-with-body")
        XCTAssertEqual(noContent.status, 0, noContent.err)
        XCTAssertEqual(noContent.out, "\n204")
    }

    func testMalformedStreamsAreResetAndNothingReachesTheUpstream() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", "smuggle", "/s")
        XCTAssertEqual(result.status, 0, result.err)
        let outcomes = result.out.split(separator: "\n")
        XCTAssertEqual(outcomes.count, 11, result.out)
        for line in outcomes {
            // PROTOCOL_ERROR (1) for each, as a stream error (or a connection error for the
            // request that breaks HPACK's rules first): never a response.
            XCTAssertTrue(line.hasSuffix(" RST_STREAM 1") || line.hasSuffix(" GOAWAY 1"), String(line))
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [], "no malformed request went upstream")
    }

    /// The raw client's `mode` against a proxy to the echo backend: its output lines (checked to
    /// be `count`), and the backend.
    private func rawOutcomes(_ mode: String, count: Int, line: UInt = #line) throws -> (lines: [String], nginx: Nginx) {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", mode, "/ok")
        XCTAssertEqual(result.status, 0, result.err, line: line)
        let lines = result.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, count, result.out, line: line)
        return (lines, nginx)
    }

    func testAHeadTheHTTP1RulesRefuseGets400AndItsBodyIsNeverReadAsAConnection() throws {
        let (lines, nginx) = try rawOutcomes("refusedhead", count: 2)
        guard lines.count == 2 else { return }
        // nghttp2 lets a fragment in `:path` through; the HTTP/1.1 rules do not. The body, an
        // HTTP/2 preface with a request, stays a body.
        XCTAssertTrue(lines[0].hasPrefix("fragment-in-path headers") && lines[0].contains("fragment in request target"),
                      lines[0])
        XCTAssertTrue(lines[1].hasPrefix("next-stream headers auth=Bearer abc"), lines[1])
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines().count, 1, "only the next stream reached nginx")
    }

    func testHeaderFloodsAreAnswered431ConnectIsRefusedAndEarlyAnswersGiveTheWindowBack() throws {
        let (lines, nginx) = try rawOutcomes("limits", count: 4)
        guard lines.count == 4 else { return }
        // 150 fields, and 300 one-byte references to a 4 KiB table entry: 431, nothing kept.
        for line in lines.prefix(2) {
            XCTAssertTrue(line.contains("\"error\": \"http_request_error\"") && line.contains("larger than 65536 bytes or 100 fields"), line)
        }
        // A CONNECT stream gets the refusal an HTTP/1.1 CONNECT gets (connect: deny).
        XCTAssertTrue(lines[2].hasPrefix("connect headers") && lines[2].contains("http_request_denied"), lines[2])
        // Eight uploads answered 403 before their bodies ended (1.6 MB, past the connection's
        // 1 MiB window): their bytes went back to the window, and the connection still works.
        XCTAssertTrue(lines[3].hasPrefix("after-uploads headers auth=Bearer abc"), lines[3])
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines().count, 1, "only the last GET reached nginx")
    }

    func testAStreamWhoseBodyStallsTimesOutLikeASocketWithoutHoldingTheConnection() throws {
        let nginx = try Nginx(locations: Self.upload)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", timeouts: "{bodyIdle: 1s}"))
        let result = try rawClient(proxy, "api.test", "stall", "/upload")
        XCTAssertEqual(result.status, 0, result.err)
        // Ended within a few seconds (bodyIdle, then the exchange's own end), never left open.
        let parts = result.out.split(separator: " ")
        XCTAssertGreaterThanOrEqual(parts.count, 3, result.out)
        let seconds = Double(parts.count > 2 ? parts[2] : "99") ?? 99
        XCTAssertLessThan(seconds, 5, result.out)
        XCTAssertGreaterThanOrEqual(seconds, 0.9, "not before the body's idle timeout: \(result.out)")
    }

    /// The conversation with its frames split a byte at a time, and with an app that drops its
    /// connection: right after the stream's head (no backend connection was ever taken: its
    /// first bytes were being waited for) and in the middle (the backend's connection is closed,
    /// not left to its timeouts); the next app's conversation is served as the first was.
    func testAConversationSplitAtEveryByteOrDroppedAtAnyPointLeavesNothingBehind() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)"))
        XCTAssertEqual(try rawClient(proxy, "api.test", "pingpongsplit", "/echo-stream").out, "pingpong 100 200\n")
        func events(_ kind: String) -> Int { backend.events().filter { $0["event"] as? String == kind }.count }
        let connectsBefore = events("connect")
        XCTAssertEqual(try rawClient(proxy, "api.test", "pingpongdrop", "/echo-stream", "0").out, "pingpong 0 dropped\n")
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(events("connect"), connectsBefore, "a stream dropped before its first bytes took no backend connection")
        XCTAssertEqual(try rawClient(proxy, "api.test", "pingpongdrop", "/echo-stream", "3").out, "pingpong 3 dropped\n")
        let deadline = Date().addingTimeInterval(5)
        while events("close") < events("connect") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertEqual(events("close"), events("connect"), "the dropped conversation's backend connection was closed")
        XCTAssertEqual(try rawClient(proxy, "api.test", "pingpong", "/echo-stream").out, "pingpong 100 200\n")
    }

    /// A stream that opens a body of unknown length and sends nothing of it (a slow POST over
    /// HTTP/2) takes no backend connection: its first bytes are waited for within
    /// `clientHeader`, then it is answered 408 and nothing reached the backend.
    func testAStreamThatSendsOnlyItsHeadTakesNoBackendConnection() throws {
        let nginx = try Nginx(locations: Self.upload)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", timeouts: "{clientHeader: 1s}"))
        let result = try rawClient(proxy, "api.test", "headonly", "/upload")
        XCTAssertEqual(result.status, 0, result.err)
        let parts = result.out.split(separator: " ")
        XCTAssertEqual(parts.count > 1 ? parts[1] : "", "408", result.out)
        let seconds = Double(parts.count > 2 ? parts[2] : "99") ?? 99
        XCTAssertGreaterThanOrEqual(seconds, 0.9, "not before clientHeader: \(result.out)")
        XCTAssertLessThan(seconds, 4, result.out)
        XCTAssertEqual(nginx.logLines().count, 0, "nothing reached the backend")
    }

    /// A stream used as a conversation with an HTTP/1.1 upstream (a POST without a length: one
    /// DATA frame, then its answer, 100 times): each frame reaches the upstream as a chunk when
    /// it arrives, and each answer comes back while the request goes on. (Collecting the body
    /// before taking an upstream held the first frame until the 64 KiB it never sends.)
    func testAStreamUsedAsAConversationWithAnHTTP1UpstreamGetsEachAnswerInTurn() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)"))
        let result = try rawClient(proxy, "api.test", "pingpong", "/echo-stream")
        XCTAssertEqual(result.out, "pingpong 100 200\n", result.err)
    }

    /// A request that ended with its head (a GET) waits for a slow upstream as long as the
    /// upstream's own timeouts allow: the app has nothing more to send, so none of the
    /// client's timeouts (a body's idle time, the head's, the connection's) runs for it.
    func testARequestEndedWithItsHeadWaitsForASlowUpstreamPastTheClientTimeouts() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(backend.port)",
                                                             timeouts: "{bodyIdle: 1s, clientHeader: 1s, idle: 1s}"))
        let result = try Curl.run(["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version} %{time_total}", "--http2-prior-knowledge",
                                   "-H", "Host: api.test", "http://127.0.0.1:\(proxy.port)/slow?ms=1600"])
        let parts = result.out.split(separator: " ")
        XCTAssertEqual(parts.prefix(2), ["200", "2"], "\(result.out) \(result.err)")
        XCTAssertGreaterThanOrEqual(Double(parts.last ?? "") ?? 0, 1.5, "the upstream's answer, not an early one: \(result.out)")
    }

    /// A request that ended with its head gets its response and nothing after it: a stream is
    /// reset only when its response ends before the app ended its request.
    func testARequestEndedWithItsHeadIsAnsweredAndNotReset() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        // Sent whole, and a byte at a time (the head and its end then come in the last read).
        for mode in ["ended", "endedsplit"] {
            let result = try rawClient(proxy, "api.test", mode, "/")
            XCTAssertEqual(result.status, 0, "\(mode): \(result.err)")
            XCTAssertEqual(result.out.trimmingCharacters(in: .whitespacesAndNewlines), "ended headers resets 0 auth=Bearer abc host=127.0.0.1",
                           mode)
        }
    }

    /// A connection with no stream open ends after the idle timeout, as an idle HTTP/1.1 one
    /// does; one whose stream is still open (its body stalled) is not cut by it.
    func testAConnectionWithoutAStreamEndsAfterTheIdleTimeoutAndOneWithAStreamDoesNot() throws {
        let nginx = try Nginx(locations: Self.upload + " " + Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)",
                                                             timeouts: "{idle: 1s, bodyIdle: 3s}"))
        let idle = try rawClient(proxy, "api.test", "idle", "/")
        XCTAssertEqual(idle.status, 0, idle.err)
        let parts = idle.out.split(whereSeparator: \.isWhitespace)
        XCTAssertEqual(parts.prefix(3), ["idle", "headers", "closed"], idle.out)
        let seconds = parts.count > 3 ? Double(parts[3]) ?? 99 : 99
        XCTAssertGreaterThanOrEqual(seconds, 0.9, "not before the idle timeout: \(idle.out)")
        XCTAssertLessThan(seconds, 4, "ended by the idle timeout: \(idle.out)")

        // A stream whose body stalls holds the connection past the idle timeout, until its own
        // (bodyIdle) ends it.
        let stalled = try rawClient(proxy, "api.test", "stall", "/upload")
        XCTAssertEqual(stalled.status, 0, stalled.err)
        let stall = stalled.out.split(separator: " ")
        let stallSeconds = stall.count > 2 ? Double(stall[2]) ?? 0 : 0
        XCTAssertGreaterThanOrEqual(stallSeconds, 2.9, "not cut by the idle timeout: \(stalled.out)")
    }

    func testAnAppThatKeepsSendingMalformedStreamsIsToldToCalmDownAndTakesNoNewStream() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", "flood", "/ok")
        XCTAssertEqual(result.status, 0, result.err)
        // 100 refusals are taken; the 101st brings GOAWAY ENHANCE_YOUR_CALM (11) naming it as
        // the last stream (the malformed ones after it are still reset by nghttp2); the valid
        // stream, read in the same bytes, is refused, not served.
        let parts = result.out.split(separator: " ")
        XCTAssertEqual(parts.count, 8, result.out)
        XCTAssertGreaterThanOrEqual(Int(parts.count > 1 ? parts[1] : "") ?? 0, 101, result.out)
        XCTAssertTrue(result.out.contains("goaway 11 last 201 "), result.out)
        XCTAssertTrue(result.out.hasSuffix("valid none\n"), result.out)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines(), [])
    }

    func testRapidResetIsToldToCalmDownAndNoResetStreamReachesTheUpstream() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", "rapidreset", "/rr")
        XCTAssertEqual(result.status, 0, result.err)
        // 1,000 streams opened and cancelled at once: past 200, GOAWAY ENHANCE_YOUR_CALM (11).
        XCTAssertTrue(result.out.hasPrefix("rapidreset goaway 11 last "), result.out)
        let last = Self.lastNumber(result.out)
        XCTAssertGreaterThan(last, 400, "not before the budget (200 streams) was spent: \(result.out)")
        XCTAssertLessThan(last, 1999, "before the attack's end: \(result.out)")
        // Each stream was reset in the bytes that opened it: none started, none went upstream.
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [])
        XCTAssertEqual(proxy.metrics().http2Refused, ["rapid_reset": 1])
        // The proxy still serves others.
        let after = try Curl.run(["--http2-prior-knowledge", "-H", "Host: api.test", "http://127.0.0.1:\(proxy.port)/after"])
        XCTAssertEqual(after.out, "auth=Bearer abc host=127.0.0.1\n")
    }

    func testStreamsAnAppMakesTheProxyResetNeverStartAndPastABudgetTheAppIsCalmed() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let started = Date()
        let result = try rawClient(proxy, "api.test", "provoke", "/p")
        XCTAssertEqual(result.status, 0, result.err)
        // The resets that spend the budget are counted as they are sent, and the app then says
        // nothing more: the connection still ends after its GOAWAY (the client reads to its end;
        // left open, it would wait out its 10 s timeout).
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, result.out)
        // MadeYouReset: 150 valid GETs, each made to be reset (its window overflowed). Each reset
        // is counted; the 101st (a few more if the budget refilled meanwhile: 10 a second) brings
        // GOAWAY ENHANCE_YOUR_CALM naming it.
        XCTAssertTrue(result.out.contains(" goaway 11 last "), result.out)
        let last = Self.lastNumber(result.out)
        XCTAssertTrue((201...261).contains(last), result.out)
        let resets = Int(result.out.split(separator: " ")[2]) ?? 0
        XCTAssertGreaterThanOrEqual(resets, 101, result.out)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [], "a stream reset in the bytes that opened it never went upstream")
        XCTAssertEqual(proxy.metrics().http2Refused["provoked_reset"], UInt64(resets))
    }

    func testAStreamOpenedInTheBytesOfAConnectionErrorIsNotServed() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        // Two GETs and a zero WINDOW_UPDATE on the first one's stream in one write: nghttp2 1.52
        // ends the connection (PROTOCOL_ERROR, naming stream 3 as the last processed); the
        // first stream was made to be reset, the second is not served either.
        let result = try rawClient(proxy, "api.test", "zeroupdate", "/z")
        XCTAssertEqual(result.out, "zeroupdate goaway 1 last 3\n", result.err)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [])
        XCTAssertEqual(proxy.metrics().http2Refused, ["provoked_reset": 1, "protocol_error": 1])
    }

    /// A PING's answer waits a moment for the connection's next frames (a gRPC runtime's
    /// flow-control PING comes with its call, and its answer rides with the response: one write
    /// and one wakeup of the app rather than two), but never long: alone, it goes within the
    /// millisecond; with a call, it comes with the response. Each answer carries its payload.
    func testAPingIsAnsweredAloneAtOnceOrWithTheResponseOfTheCallItCameWith() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let result = try rawClient(proxy, "api.test", "pings", "/p")
        let parts = result.out.split(separator: " ").map(String.init)
        XCTAssertEqual(parts.count, 7, result.out + result.err)
        guard parts.count == 7 else { return }
        XCTAssertEqual([parts[0], parts[1], parts[2], parts[4], parts[5], parts[6]], ["pings", "idle", "ok", "call", "ok", "200\n"], result.out)
        XCTAssertLessThan(Int(parts[3]) ?? 9999, 500, "the idle PING's answer did not wait for frames that never came")
    }

    func testAppsThatCloseWhileTheirPingsAnswerWaitsLeaveTheProxyServing() throws {
        // The answer is held when the app goes (one app closes mid-PING); its connection's clock
        // ends with it, and nothing runs for a connection that is gone.
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let dropped = try rawClient(proxy, "api.test", "pingdrop")
        XCTAssertEqual(dropped.out, "pingdrop 10\n", dropped.err)
        Thread.sleep(forTimeInterval: 0.05)  // past the answers' millisecond
        let after = try rawClient(proxy, "api.test", "pings", "/after")
        XCTAssertTrue(after.out.hasPrefix("pings idle ok "), after.out + after.err)
        XCTAssertTrue(after.out.hasSuffix(" call ok 200\n"), after.out)
    }

    func testEmptyDataFramesAndPingFloodsEndTheirConnection() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        let empty = try rawClient(proxy, "api.test", "emptyframes", "/e")
        XCTAssertEqual(empty.out, "emptyframes goaway 11\n", empty.err)
        // 20,000 PINGs never read: nghttp2's queue of answers fills, the connection ends.
        let started = Date()
        let flood = try rawClient(proxy, "api.test", "pingflood")
        XCTAssertTrue(flood.out.hasSuffix(" closed\n"), flood.out + flood.err)
        XCTAssertLessThan(Date().timeIntervalSince(started), 8, "the proxy ended it (a lingering close is 2 s)")
        let refused = proxy.metrics().http2Refused
        XCTAssertEqual(refused["empty_frames"], 1, "\(refused)")
        // Told to calm down past the pings' budget, or ended when nghttp2's queue of answers
        // filled first: which comes first depends on how the reads fall.
        XCTAssertGreaterThanOrEqual((refused["control_frames"] ?? 0) + (refused["outbound_flood"] ?? 0), 1, "\(refused)")
    }

    func testAPingFloodThatGoesOnIsCutOffNotReadForTheWholeLinger() throws {
        let nginx = try Nginx(locations: Self.echo)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: nginx.port))
        // Past the pings' budget the connection is told to calm down and closed; what the
        // flood still sends is dropped only up to a bound, then the connection is cut (a 2 s
        // linger read it all, at the attacker's pace).
        let result = try rawClient(proxy, "api.test", "pingstream")
        XCTAssertTrue(result.out.hasPrefix("pingstream ended "), result.out + result.err)
        let seconds = Double(result.out.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 99
        XCTAssertLessThan(seconds, 1.5, result.out)
    }

    func testAStreamWhoseAppNeverOpensItsWindowTimesOutFreesItsUpstreamAndIsNotSpooled() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-noread-\(UUID().uuidString)")
        try Data(repeating: 0x6e, count: 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let nginx = try Nginx(locations: "location /files/ { alias \(FileManager.default.temporaryDirectory.path)/; }")
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", timeouts: "{bodyIdle: 1s}"))
        let result = try rawClient(proxy, "api.test", "noread", "/files/\(file.lastPathComponent)")
        XCTAssertEqual(result.status, 0, result.err)
        // The response waits for a window that never opens: the write timeout (bodyIdle) ends
        // the stream, as it would end a socket that never reads.
        let parts = result.out.split(separator: " ")
        XCTAssertTrue(result.out.hasPrefix("noread RST "), result.out)
        let seconds = Double(parts.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 99
        XCTAssertLessThan(seconds, 5, result.out)
        // An app that never took more than its first window may never read: its response is
        // not written to disk for it (a slow HTTP/1.1 client's 1 MiB would be).
        XCTAssertEqual(proxy.metrics().spooledResponses, 0)
    }

    func testAnAppThatStopsReadingItsConnectionHasItClosedAfterTheWriteTimeout() throws {
        // Windows of 16 MiB let the response fill the socket, and then the app reads nothing
        // (it hung): nothing the sidecar writes makes progress, and after the write timeout
        // (bodyIdle) the connection is closed — not held with its buffers for as long as the
        // app keeps its socket open (its streams' resets could not even be sent).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-stopread-\(UUID().uuidString)")
        try Data(repeating: 0x73, count: 8 * 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let nginx = try Nginx(locations: "location /files/ { alias \(FileManager.default.temporaryDirectory.path)/; }")
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", timeouts: "{bodyIdle: 1s, idle: 60s}"))
        let outcome = Locked<Command.Outcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        let command = ["python3", Backend.fixtures.appendingPathComponent("h2_raw_client.py").path, String(proxy.port),
                       "api.test", "stopread", "/files/\(file.lastPathComponent)"]
        Thread.detachNewThread {
            outcome.withLock { $0 = try? Command.run(command, timeout: 30) }
            done.signal()
        }
        XCTAssertTrue(eventually(timeout: .seconds(10)) { proxy.metrics().clientConnections == 1 }, "the app connected")
        XCTAssertTrue(eventually(timeout: .seconds(6)) { proxy.metrics().clientConnections == 0 },
                      "closed while the app still read nothing (it reads again after 8 s)")
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let out = outcome.withLock { $0?.out } ?? ""
        XCTAssertTrue(out.hasPrefix("stopread closed "), out)
    }

    func testAnAppThatReadsSlowlyHasItsResponseSpooledOnceItOpenedItsWindow() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-slowread-\(UUID().uuidString)")
        try Data(repeating: 0x73, count: 1024 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let nginx = try Nginx(locations: "location /files/ { alias \(FileManager.default.temporaryDirectory.path)/; }")
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)"))
        let result = try rawClient(proxy, "api.test", "slowread", "/files/\(file.lastPathComponent)")
        XCTAssertEqual(result.out, "slowread 200 1048576\n", result.err)
        // It fell behind, and it reads: the rest went to disk and its upstream connection back.
        XCTAssertEqual(proxy.metrics().spooledResponses, 1)
    }
}
