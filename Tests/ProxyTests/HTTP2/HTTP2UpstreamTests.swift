import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// `upstreamProtocol: h2` and `h2c`: HTTP/1.1 apps (curl) reach an HTTP/2 upstream (Debian's
/// nginx with `listen … http2`), their exchanges sharing its connections, with the token
/// injected in every stream and bodies intact both ways.
final class HTTP2UpstreamTests: XCTestCase {
    static let echo = #"location / { return 200 "auth=$http_authorization proto=$server_protocol\n"; }"#

    /// curl through `proxy` for each of `paths` at once (20 in parallel); the status codes.
    private func parallelGets(_ proxy: ProxyHarness, _ paths: [String]) throws -> [String] {
        var arguments = ["-x", "http://127.0.0.1:\(proxy.port)", "--parallel", "--parallel-max", "20"]
        for path in paths { arguments += ["-o", "/dev/null", "-w", "%{http_code}\n", "http://api.test\(path)"] }
        let result = try Curl.run(arguments)
        XCTAssertEqual(result.status, 0, result.err)
        return result.out.split(separator: "\n").map(String.init)
    }

    func testHTTP1AppsShareOneH2cConnectionAndEveryStreamCarriesTheToken() throws {
        let nginx = try Nginx(locations: Self.echo, http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", tls: "upstreamProtocol: h2c"))
        let one = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-H", "Authorization: Bearer app-own", "http://api.test/one"])
        XCTAssertEqual(one.out, "auth=Bearer abc proto=HTTP/2.0\n", one.err)
        let statuses = try parallelGets(proxy, (1...40).map { "/n\($0)" })
        XCTAssertEqual(statuses, Array(repeating: "200", count: 40))
        let lines = nginx.waitForLogLines(41)
        XCTAssertEqual(lines.count, 41)
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"Bearer abc\"") && $0.hasSuffix("HTTP/2.0\"") }, "\(lines)")
        // nginx's $connection: every exchange went over the one HTTP/2 connection.
        XCTAssertEqual(Set(lines.map { $0.split(separator: " ")[0] }).count, 1, "\(lines)")
    }

    /// A response that came over HTTP/2 says so in its `Via` to an HTTP/1.1 app (RFC 9110
    /// §7.6.3), and the request it answers says the app's protocol to the upstream.
    func testViaNamesTheProtocolEachMessageCameIn() throws {
        let nginx = try Nginx(locations: #"location / { return 200 "via=$http_via\n"; }"#, http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", tls: "upstreamProtocol: h2c"))
        let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-D", "-", "http://api.test/v"])
        XCTAssertEqual(result.status, 0, result.err)
        let lines = result.out.split(separator: "\r\n").map(String.init)
        XCTAssertTrue(lines.contains("Via: 2 token-sidecar"), result.out)
        XCTAssertEqual(lines.last, "via=1.1 token-sidecar\n", result.out)
    }

    func testManyResponsesOverOneConnectionGiveItsWindowBack() throws {
        // 200 × 200 KiB (39 MiB) over one shared connection, whose window (32 MiB) is smaller:
        // each response's bytes, once taken, reopen it, however they arrived.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("h2-200k-\(UUID().uuidString)")
        try Data(repeating: 0x61, count: 200 * 1024).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let nginx = try Nginx(locations: "location /f { alias \(file.path); }", http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", tls: "upstreamProtocol: h2c"))
        let statuses = try parallelGets(proxy, (1...200).map { _ in "/f" })
        XCTAssertEqual(statuses, Array(repeating: "200", count: 200))
        XCTAssertEqual(Set(nginx.waitForLogLines(200).map { $0.split(separator: " ")[0] }).count, 1)
    }

    func testBodiesGoBothWaysWholeAndAHeadRequestHasNone() throws {
        let backend = try Backend()
        let nginx = try Nginx(locations: """
            client_max_body_size 100m;
            location / { proxy_pass http://127.0.0.1:\(backend.port); proxy_http_version 1.1; }
            """, http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", tls: "upstreamProtocol: h2c"))
        let via = ["-x", "http://127.0.0.1:\(proxy.port)"]
        let size = 3_000_000
        // Download, chunked by the backend (nginx relays it as DATA; the sidecar chunks it again).
        let sha = try Curl.run(via + ["http://api.test/download-sha?size=\(size)"]).out
        let download = try Command.run(["sh", "-c", "curl -q -sS --max-time 20 -x http://127.0.0.1:\(proxy.port) 'http://api.test/download?size=\(size)&mode=chunked' | sha256sum"], timeout: 30)
        XCTAssertEqual(download.out.prefix(64), sha.prefix(64), download.err)
        // Uploads with a length and chunked (then DATA frames, and a length again behind nginx).
        let body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for chunked in [false, true] {
            let result = try Curl.run(via + ["-X", "PUT", "--data-binary", "@-", "-H", "Content-Type: application/octet-stream"]
                                      + (chunked ? ["-H", "Transfer-Encoding: chunked"] : []) + ["http://api.test/upload"], stdin: body)
            XCTAssertTrue(result.out.contains("\"body_len\": \(size)") || result.out.contains("\"body_len\":\(size)"), "\(chunked): \(result.out) \(result.err)")
        }
        let head = try Curl.run(via + ["-I", "http://api.test/download?size=1000&mode=cl"])
        XCTAssertTrue(head.out.hasPrefix("HTTP/1.1 200"), head.out)
        XCTAssertTrue(head.out.lowercased().contains("content-length: 1000"), head.out)
        let uploads = backend.requests().filter { $0["target"] as? String == "/upload" }
        XCTAssertEqual(uploads.map { $0["body_len"] as? Int }, [size, size])
        XCTAssertTrue(uploads.allSatisfy { Backend.headerValues($0, "authorization") == ["Bearer abc"] })
    }

    func testAnUpstreamThatEndsItsConnectionsWithGoAwayLosesNoRequest() throws {
        // nginx ends an HTTP/2 connection with GOAWAY after 5 requests: the exchanges move on to
        // new connections; none fails.
        let nginx = try Nginx(locations: "keepalive_requests 5;\n" + Self.echo, http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(nginx.port)", tls: "upstreamProtocol: h2c"))
        let statuses = try parallelGets(proxy, (1...40).map { "/g\($0)" })
        XCTAssertEqual(statuses, Array(repeating: "200", count: 40))
        let lines = nginx.waitForLogLines(40)
        XCTAssertEqual(lines.count, 40)
        XCTAssertGreaterThanOrEqual(Set(lines.map { $0.split(separator: " ")[0] }).count, 8, "\(lines)")
    }

    func testH2OverTLSIsAgreedInALPNAndAnUpstreamWithoutItIs502() throws {
        let ca = try TestCA()
        let h2 = try Nginx(locations: Self.echo, tls: (ca.localhostCert, ca.localhostKey), http2: true)
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "https://127.0.0.1:\(h2.port)",
                                                             tls: "caFile: \(ca.caCert)\n    upstreamProtocol: h2"))
        let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/tls"])
        XCTAssertEqual(result.out, "auth=Bearer abc proto=HTTP/2.0\n", result.err)

        let http1 = try Nginx(locations: Self.echo, tls: (ca.localhostCert, ca.localhostKey))
        let refused = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "https://127.0.0.1:\(http1.port)",
                                                               tls: "caFile: \(ca.caCert)\n    upstreamProtocol: h2"))
        let failed = try Curl.run(["-x", "http://127.0.0.1:\(refused.port)", "-D", "-", "http://api.test/tls"])
        XCTAssertTrue(failed.out.hasPrefix("HTTP/1.1 502"), failed.out)
        XCTAssertTrue(failed.out.contains("Proxy-Status: token-sidecar; error=tls_protocol_error"), failed.out)
        // (nginx ends the handshake itself: it offers http/1.1 only.)
        XCTAssertTrue(failed.out.contains("no application protocol"), failed.out)
        XCTAssertEqual(http1.logLines(), [], "nothing was sent over a connection that did not agree to HTTP/2")
    }

    func testAutoSpeaksHTTP2WhereTheUpstreamAgreesAndHTTP1Elsewhere() throws {
        // upstreamProtocol unset (auto): ALPN offers h2 and http/1.1 to https upstreams.
        let ca = try TestCA()
        let h2 = try Nginx(locations: Self.echo, tls: (ca.localhostCert, ca.localhostKey), http2: true)
        let http1 = try Nginx(locations: Self.echo, tls: (ca.localhostCert, ca.localhostKey))
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "https://127.0.0.1:\(h2.port)", tls: "caFile: \(ca.caCert)", extraRoutes: """
              - host: "old.test"
                upstream: "https://127.0.0.1:\(http1.port)"
                caFile: \(ca.caCert)
                credential: api
            """))
        for _ in 0..<3 {
            XCTAssertEqual(try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/auto"]).out, "auth=Bearer abc proto=HTTP/2.0\n")
            XCTAssertEqual(try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://old.test/auto"]).out, "auth=Bearer abc proto=HTTP/1.1\n")
        }
        // The first connection agreed on h2 and carried every later request.
        XCTAssertEqual(Set(h2.waitForLogLines(3).map { $0.split(separator: " ")[0] }).count, 1, "\(h2.logLines())")
        XCTAssertEqual(Set(http1.waitForLogLines(3).map { $0.split(separator: " ")[0] }).count, 1, "\(http1.logLines())")
    }

    /// A proxy to the misbehaving HTTP/2 upstream (Fixtures/h2_raw_server.py) in `mode`.
    private func misbehaving(_ mode: String, timeouts: String? = nil) throws -> (FixtureProcess, ProxyHarness) {
        let server = try FixtureProcess(script: "ProxyTests/Fixtures/h2_raw_server.py", arguments: [mode])
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(upstream: "http://127.0.0.1:\(server.port)", tls: "upstreamProtocol: h2c",
                                                             timeouts: timeouts))
        return (server, proxy)
    }

    func testAnUpstreamsPingIsAnsweredWithItsPayloadWhenNoFramesGoItsWay() throws {
        // The server waits for its PING's answer before it answers the request: nothing else
        // goes its way meanwhile, so the answer goes alone, a millisecond later at most.
        let (server, proxy) = try misbehaving("pinger")
        for call in 1...2 {
            let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "--max-time", "10", "http://api.test/p\(call)"])
            let parts = result.out.split(separator: " ")
            XCTAssertEqual(parts.prefix(4).joined(separator: " "), "ok \(call) ack ok", result.out + result.err)
            XCTAssertLessThan(Int(parts.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 9999, 500, result.out)
        }
        _ = server
    }

    func testAnUpstreamThatNeverAcknowledgesSettingsGetsNoNewStreamOnThatConnection() throws {
        // SETTINGS unacknowledged past the connect timeout (1 s here): the open streams finish,
        // the next request goes over a new connection.
        let (server, proxy) = try misbehaving("noack", timeouts: "{connect: 1s}")
        let first = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/a"])
        XCTAssertEqual(first.out, "ok 1 conn 1\n", first.err)
        Thread.sleep(forTimeInterval: 1.5)
        let second = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/b"])
        XCTAssertEqual(second.out, "ok 2 conn 2\n", second.err)
        _ = server
    }

    func testAnUpstreamThatHoldsEveryWindowAtZeroFailsOnlyTheUploadsItNeverTakes() throws {
        let (server, proxy) = try misbehaving("zerowindow", timeouts: "{bodyIdle: 1s}")
        let started = Date()
        let upload = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-D", "-", "-o", "/dev/null", "--data-binary", "@-",
                                   "http://api.test/up"], stdin: Data(repeating: 0x75, count: 100_000))
        XCTAssertTrue(upload.out.hasPrefix("HTTP/1.1 504"), upload.out + upload.err)
        XCTAssertTrue(upload.out.contains("Proxy-Status: token-sidecar; error="), upload.out)
        XCTAssertLessThan(Date().timeIntervalSince(started), 6, "ended by the body's idle timeout, not left hanging")
        // A GET needs no window: it is answered, over the same connection.
        let get = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/g"])
        XCTAssertEqual(get.out, "ok 1 conn 1\n", get.err)
        _ = server
    }

    /// An upstream that opens every window wide but reads slowly: an upload's frames fill the
    /// socket's output past what one turn writes, the codec holds the rest, and each drain of
    /// the socket sends more (a drain with nothing held back sends nothing) until the whole
    /// body is there; the connection then serves the next request.
    func testAnUploadToAnUpstreamThatReadsSlowlyArrivesWholeAsItsSocketDrains() throws {
        let (server, proxy) = try misbehaving("slowreader", timeouts: "{bodyIdle: 5s}")
        let size = 3 * 1024 * 1024
        let upload = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "--max-time", "30", "--data-binary", "@-",
                                   "http://api.test/up"], stdin: Data(repeating: 0x75, count: size))
        XCTAssertEqual(upload.out, "ok 1 len \(size)\n", upload.err)
        let get = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/g"])
        XCTAssertEqual(get.out, "ok 2 len 0\n", get.err)
        _ = server
    }

    /// A response without a length whose HEADERS, DATA and END_STREAM come in one read: its
    /// body reaches the app whole (not an empty 200 with the body taken for stray bytes), and
    /// the connection serves the next request.
    func testABodyWithoutALengthThatComesWithItsHeadInOneReadArrivesWhole() throws {
        let (server, proxy) = try misbehaving("unsized")
        for n in 1...3 {
            let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/u\(n)"])
            XCTAssertEqual(result.out, "ok \(n) conn 1\n", result.err)
        }
        _ = server
    }

    /// An HTTP/2 app's POSTs without a length, each its HEADERS and its one DATA frame with
    /// END_STREAM in one write (a unary gRPC call's shape), one after the other on one
    /// connection: each upstream stream ends with its body, also the pooled stream's later
    /// ones. ("unsized" answers a request only once it ended: the app's END_STREAM, taken
    /// between the request's head and the pooled stream's bind to its connection, was lost
    /// there; the upstream never answered, then 504.)
    func testUploadsWhoseEndCameWithTheirHeadEndTheirStreamEachTime() throws {
        let (server, proxy) = try misbehaving("unsized", timeouts: "{responseHeaders: 3s}")
        let result = try Command.run(["python3", Backend.fixtures.appendingPathComponent("h2_raw_client.py").path, String(proxy.port),
                                      "api.test", "uploads", "/u"], timeout: 30)
        XCTAssertEqual(result.out, "upload 0 200 ok 1 conn 1\nupload 1 200 ok 2 conn 1\nupload 2 200 ok 3 conn 1\n", result.err)
        _ = server
    }

    func testResponseHeadersOverTheLimitsFailTheirRequestWith502() throws {
        let (server, proxy) = try misbehaving("bigheaders")
        for _ in 0..<2 {
            let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-D", "-", "http://api.test/h"])
            XCTAssertTrue(result.out.hasPrefix("HTTP/1.1 502"), result.out)
            XCTAssertTrue(result.out.contains("Proxy-Status: token-sidecar; error="), result.out)
        }
        _ = server
    }

    func testAGoAwayMidResponseCutsThatResponseAndItsConnectionIsNotUsedAgain() throws {
        let (server, proxy) = try misbehaving("goawaymid")
        for _ in 0..<2 {
            // Each on a new connection (a reused one would be closed: a 502 or a hang, not this).
            let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                       "http://api.test/m"])
            XCTAssertEqual(result.status, 18, result.err)
            XCTAssertEqual(result.out, "200 10")
        }
        _ = server
    }

    func testAGracefulShutdownNoticeMovesRequestsToANewConnection() throws {
        // GOAWAY with the largest stream id (2^31-1) after each connection's first answer.
        let (server, proxy) = try misbehaving("graceful")
        for n in 1...5 {
            let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "http://api.test/g"])
            XCTAssertEqual(result.out, "ok \(n)\n", result.err)
        }
        _ = server
    }

    func testAnUpstreamThatResetsOrRefusesEveryStreamFailsOnlyThoseRequests() throws {
        let (resetting, resetProxy) = try misbehaving("reset")
        let reset = try Curl.run(["-x", "http://127.0.0.1:\(resetProxy.port)", "-D", "-", "http://api.test/r"])
        XCTAssertTrue(reset.out.hasPrefix("HTTP/1.1 502"), reset.out)
        XCTAssertTrue(reset.out.contains("Proxy-Status: token-sidecar; error="), reset.out)
        let (refusing, refuseProxy) = try misbehaving("refuse")
        let refused = try Curl.run(["-x", "http://127.0.0.1:\(refuseProxy.port)", "-D", "-", "http://api.test/r"])
        XCTAssertTrue(refused.out.hasPrefix("HTTP/1.1 502"), refused.out)
        XCTAssertTrue(refused.out.contains("refused the request's stream 4 times"), refused.out)
        // The sidecar goes on serving: another request gets the same, not a hang.
        XCTAssertTrue(try Curl.run(["-x", "http://127.0.0.1:\(refuseProxy.port)", "-D", "-", "http://api.test/r"]).out.hasPrefix("HTTP/1.1 502"))
        _ = (resetting, refusing)
    }

    func testAResponseCompleteBeforeItsUploadEndsThatStreamAloneAndThePipeServesTheNextRequest() throws {
        // RFC 9113 §8.1: a server may answer before the whole request has come (a gRPC server
        // answers once it has the message, often before the END_STREAM behind it). That stream
        // is done: the rest of the upload is not sent, the stream is reset with NO_ERROR (not
        // CANCEL: nothing failed), and the stream pipe goes back to the pool for the next
        // request. It used to be closed, which also marked the key as closing eagerly, and every
        // later POST then took a new pipe (half the calls of a gRPC benchmark answered so).
        let (server, proxy) = try misbehaving("early")
        let via = ["-x", "http://127.0.0.1:\(proxy.port)"]
        let upload = try Curl.run(via + ["-X", "POST", "--data-binary", "@-", "http://api.test/up"],
                                  stdin: Data(repeating: 0x61, count: 2_000_000))
        XCTAssertEqual(upload.out, "ok 1 conn 1 rst \n", upload.err)
        let idle = UpstreamGaugeKey(upstream: "127.0.0.1:\(server.port)", state: "idle")
        XCTAssertTrue(eventually { proxy.metrics().upstreamConnections[idle] == 1 }, "the pipe is pooled: \(proxy.metrics().upstreamConnections)")
        let next = try Curl.run(via + ["http://api.test/next"])
        XCTAssertEqual(next.out, "ok 2 conn 1 rst 0\n", "the answered upload's stream was reset with NO_ERROR: \(next.err)")
        XCTAssertEqual(proxy.metrics().upstreamConnections[idle], 1, "the next request took the pooled pipe")
    }

    func testAnAppThatLeavesBeforeTheAnswerHasItsUpstreamStreamReset() throws {
        // An HTTP/1.1 backend's connection is drained for the next request when its client
        // leaves; a stream of an HTTP/2 upstream is reset instead (CANCEL): that costs no
        // connection, and the upstream learns at once that nobody waits (a gRPC server cancels
        // the call). The answer this server would give half a second later never comes.
        let (server, proxy) = try misbehaving("slow")
        let via = ["-x", "http://127.0.0.1:\(proxy.port)"]
        let left = try Curl.run(via + ["--max-time", "0.2", "http://api.test/left"])
        XCTAssertEqual(left.status, 28, "curl gave up: \(left.err)")
        Thread.sleep(forTimeInterval: 0.6)
        let next = try Curl.run(via + ["http://api.test/next"])
        XCTAssertEqual(next.out, "ok 1 conn 1 rst 8\n", "the left request's stream was cancelled and never answered: \(next.err)")
        _ = server
    }

    func testAResponseWholeByItsLengthBeforeItsStreamEndsLeavesNothingToTheNextRequest() throws {
        // A server may send a body whole by its content-length and its END_STREAM later, in an
        // empty DATA frame (Go's HTTP/2 server does). The exchange is complete with the body; its
        // pipe, given back, must leave that stream (reset with NO_ERROR) so that the next request
        // gets a stream of its own: reused still on the old one, it waited for an answer that
        // never came to it.
        let (server, proxy) = try misbehaving("lateend", timeouts: "{responseHeaders: 3s}")
        let via = ["-x", "http://127.0.0.1:\(proxy.port)"]
        let first = try Curl.run(via + ["http://api.test/first"])
        XCTAssertEqual(first.out, "ok 1 conn 1 rst \n", first.err)
        let second = try Curl.run(via + ["-X", "POST", "--data", "x=1", "http://api.test/second"])
        XCTAssertEqual(second.out, "ok 2 conn 1 rst 0\n", "the first stream was left, reset with NO_ERROR: \(second.err)")
        _ = server
    }

    func testAResponseCutShortByTheUpstreamIsCutShortForTheApp() throws {
        let (server, proxy) = try misbehaving("truncate")
        let result = try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "http://api.test/t"])
        // curl: 200, 10 of 100 bytes, and "transfer closed with outstanding read data" (18).
        XCTAssertEqual(result.status, 18, result.err)
        XCTAssertEqual(result.out, "200 10")
        _ = server
    }

    /// curl through `proxy` with `arguments` (given up after 20 s).
    private func curl(_ proxy: ProxyHarness, _ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try Curl.run(["-x", "http://127.0.0.1:\(proxy.port)", "--max-time", "20"] + arguments)
    }

    func testAResponseHeadHTTP2CallsMalformedIs502AndTheSidecarGoesOnServing() throws {
        // An uppercase field name (RFC 9113 §8.2.1) and a connection-specific field (§8.2.2):
        // nghttp2 resets such a stream (PROTOCOL_ERROR) before its head reaches the exchange.
        for mode in ["uppercase", "connfield"] {
            let (server, proxy) = try misbehaving(mode)
            for _ in 0..<2 {
                let result = try curl(proxy, ["-D", "-", "http://api.test/m"])
                XCTAssertTrue(result.out.hasPrefix("HTTP/1.1 502"), "\(mode): \(result.out)")
                XCTAssertTrue(result.out.contains("Proxy-Status: token-sidecar; error="), "\(mode): \(result.out)")
                XCTAssertFalse(result.out.lowercased().contains("x-up"), "nothing of the malformed head is passed on")
            }
            _ = server
        }
    }

    func testAResponseWithMoreDataThanItsLengthNeverReachesTheAppWhole() throws {
        // content-length 5, then 10 bytes: the stream is reset as malformed (RFC 9113 §8.1.1).
        // The app gets a 502, or a head and less than its length with the connection cut: never
        // a 200 that looks whole, and never the bytes beyond the length.
        let (server, proxy) = try misbehaving("overlong")
        for _ in 0..<2 {
            let result = try curl(proxy, ["-o", "-", "-w", "\n%{http_code} %{size_download}",
                                       "http://api.test/o"])
            let summary = result.out.split(separator: "\n").last.map(String.init) ?? ""
            XCTAssertTrue(summary.hasPrefix("502") || (result.status == 18 && summary.hasPrefix("200")),
                          "exit \(result.status): \(result.out) \(result.err)")
            XCTAssertFalse(result.out.contains("56789"), "the bytes beyond the length were passed on: \(result.out)")
        }
        _ = server
    }

    func testAStreamResetMidResponseCutsThatResponseAndTheConnectionServesTheNext() throws {
        let (server, proxy) = try misbehaving("rstmid")
        let cut = try curl(proxy, ["-o", "/dev/null", "-w", "%{http_code} %{size_download}", "http://api.test/cut"])
        // curl: 200, 10 of 100 bytes, "transfer closed with outstanding read data" (18).
        XCTAssertEqual(cut.status, 18, cut.err)
        XCTAssertEqual(cut.out, "200 10")
        let next = try curl(proxy, ["http://api.test/next"])
        XCTAssertEqual(next.out, "ok 1 conn 1\n", "a stream's reset leaves its connection serving: \(next.err)")
        _ = server
    }

    func testAnUpstreamThatNeverAnswersIs504AndItsStreamIsCancelled() throws {
        // The stream given up probes the connection (a PING): this server answers it, so the
        // connection stays past the probe's deadline (the connect timeout, 1 s here).
        let (server, proxy) = try misbehaving("silent", timeouts: "{responseHeaders: 500ms, connect: 1s}")
        let started = Date()
        let waited = try curl(proxy, ["-D", "-", "http://api.test/never"])
        XCTAssertTrue(waited.out.hasPrefix("HTTP/1.1 504"), waited.out)
        XCTAssertTrue(waited.out.contains("error=http_response_timeout"), waited.out)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the response-head timeout, not curl's")
        Thread.sleep(forTimeInterval: 1.5)
        let next = try curl(proxy, ["http://api.test/next"])
        XCTAssertEqual(next.out, "ok 1 conn 1 rst 8\n", "the stream waited on was cancelled, its connection kept: \(next.err)")
        _ = server
    }

    func testAnUpstreamAllowingOneStreamAtATimeServesEveryParallelRequest() throws {
        // SETTINGS_MAX_CONCURRENT_STREAMS 1: requests beyond it wait for room or go over more
        // connections, never refused; the server counts streams opened beyond its limit.
        // Once a connection was told the limit, a new one opened for the requests waiting takes
        // no more streams than that before its own SETTINGS come.
        let (server, proxy) = try misbehaving("maxone")
        XCTAssertEqual(try curl(proxy, ["http://api.test/first"]).out, "ok 1 conn 1 over 0\n")
        XCTAssertEqual(try parallelGets(proxy, (1...20).map { "/p\($0)" }), Array(repeating: "200", count: 20))
        let last = try curl(proxy, ["http://api.test/last"])
        XCTAssertTrue(last.out.hasPrefix("ok 22 "), last.out)
        XCTAssertTrue(last.out.hasSuffix(" over 0\n"), "no stream was opened beyond the upstream's limit: \(last.out)")
        // A first burst, before any SETTINGS: the streams beyond the limit that the upstream
        // refused are sent again where there is room, and none fails.
        let (coldServer, cold) = try misbehaving("maxone")
        XCTAssertEqual(try parallelGets(cold, (1...20).map { "/c\($0)" }), Array(repeating: "200", count: 20))
        _ = (server, coldServer)
    }

    func testAnHTTP2AppsStreamCutByTheUpstreamIsResetAndItsOtherStreamsFinish() throws {
        // Two streams of one app connection go to one upstream connection, whose server cuts the
        // first response after 10 of its 100 bytes (RST_STREAM): that app stream is reset, not
        // ended as if whole, and the other is answered, over the same connections.
        let (server, proxy) = try misbehaving("rstmid")
        let result = try Command.run(["nghttp", "-v", "-H", ":authority: api.test",
                                      "http://127.0.0.1:\(proxy.port)/a", "http://127.0.0.1:\(proxy.port)/b"], timeout: 20)
        let lines = result.out.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("recv RST_STREAM") }.count, 1, result.out)
        // (The cut stream's head may go first or not at all: the server's HEADERS, DATA and
        // RST_STREAM come in one read.)
        XCTAssertTrue(result.out.contains("ok 1 conn 1"), "the other stream's answer, over the same upstream connection: \(result.out)")
        XCTAssertFalse(lines.contains { $0.contains("recv DATA frame") && $0.contains("END_STREAM") && $0.contains("length=10") },
                       "the cut response does not end as if whole")
        _ = server
    }

    func testStreamsAboveAGoAwaysLastAreSentAgainOnANewConnection() throws {
        // Two requests in flight on one connection; the server ends it with GOAWAY naming the
        // first as its last (it will not process the second, RFC 9113 §6.8) and answers only the
        // first. The second, a POST too, goes again over a new connection: no request is lost.
        let (server, proxy) = try misbehaving("goawaylow")
        let result = try curl(proxy, ["--parallel", "--parallel-immediate", "--parallel-max", "2",
                                      "http://api.test/get", "-X", "POST", "--data", "x=1", "http://api.test/post"])
        XCTAssertEqual(result.status, 0, result.err)
        let answers = result.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(answers.count, 2, result.out)
        XCTAssertEqual(answers.filter { $0.contains(" conn 1 ") }.count, 1, "one answered before the GOAWAY: \(answers)")
        XCTAssertEqual(answers.filter { $0.contains(" conn 2 ") }.count, 1, "the other sent again, on a new connection: \(answers)")
        _ = server
    }

    func testAnAppThatLeavesMidUploadHasItsUpstreamStreamReset() throws {
        // 200 KiB of a 1 MiB upload (past what is staged for a replay: it streams), then the
        // app's connection ends: the upstream stream is cancelled, not left open waiting for
        // the rest, and its connection serves the next request.
        let (server, proxy) = try misbehaving("slow")
        let client = try RawClient(port: proxy.port)
        client.send("POST http://api.test/up HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1048576\r\n\r\n")
        client.send([UInt8](repeating: 0x61, count: 200 * 1024))
        Thread.sleep(forTimeInterval: 1)
        client.close()
        Thread.sleep(forTimeInterval: 1)
        let next = try curl(proxy, ["http://api.test/next"])
        XCTAssertEqual(next.out, "ok 1 conn 1 rst 8\n", "the left upload's stream was cancelled (CANCEL, 8): \(next.err)")
        _ = server
    }

    func testAnUpstreamWhoseFramesComeAByteAtATimeIsReadWhole() throws {
        // SETTINGS, HEADERS and DATA each split at every byte across reads.
        let (server, proxy) = try misbehaving("trickle")
        XCTAssertEqual(try curl(proxy, ["http://api.test/a"]).out, "ok 1 conn 1\n")
        XCTAssertEqual(try curl(proxy, ["-X", "POST", "--data", "x=1", "http://api.test/b"]).out, "ok 2 conn 1\n")
        XCTAssertEqual(try curl(proxy, ["http://api.test/c"]).out, "ok 3 conn 1\n")
        _ = server
    }

    func testAConnectionWhoseUpstreamFellSilentIsClosedAndTheNextRequestGoesOverANewOne() throws {
        // A peer that vanished without a FIN (a deleted pod, an expired NAT mapping): the first
        // request's connection takes the second's stream and answers nothing, not even a PING.
        // The 504 probes it; silent past the probe's deadline, it is closed, and the third
        // request goes over a new connection instead of timing out on the dead one.
        let (server, proxy) = try misbehaving("blackhole", timeouts: "{responseHeaders: 500ms, connect: 1s}")
        XCTAssertEqual(try curl(proxy, ["http://api.test/first"]).out, "ok 1 conn 1\n")
        let lost = try curl(proxy, ["-D", "-", "-o", "/dev/null", "http://api.test/lost"])
        XCTAssertTrue(lost.out.hasPrefix("HTTP/1.1 504"), lost.out)
        // The probe's deadline is 1 s; a loaded machine may run it late: asked again for 8 s.
        Thread.sleep(forTimeInterval: 1.5)
        var third = try curl(proxy, ["http://api.test/third"])
        let deadline = Date().addingTimeInterval(8)
        while third.out != "ok 2 conn 2\n" && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.5)
            third = try curl(proxy, ["http://api.test/third"])
        }
        XCTAssertEqual(third.out, "ok 2 conn 2\n", "a new connection: \(third.out) \(third.err)")
        _ = server
    }
}
