import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// What only a real sidecar on loopback shows: several worker threads serving concurrent clients,
/// destinations refused after the real resolver answered (cloud metadata, link-local,
/// "this network"), whatever `otherHosts:` says, while loopback upstreams keep working; a
/// connect the kernel keeps under way (a blackholed address) raced past or cut by the connect
/// timeout; and server-sent events flushed to a real client as they come.
final class SocketEdgeTests: XCTestCase {
    /// `otherHosts: forward` with a 1 s connect timeout, so that a missing check fails fast.
    private static func destinationYAML(backendPort: Int) -> String {
        ProxyHarness.yaml(backendPort: backendPort, otherHosts: "forward") + "\ntimeouts: {connect: 1s, responseHeaders: 5s}\n"
    }

    private func send(_ proxy: ProxyHarness, target: String, host: String) throws -> TestResponse {
        let client = try RawClient(port: proxy.port, timeout: 5)
        client.send("GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
        return try client.readResponse()
    }

    func testSeveralWorkersServeConcurrentClients() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port, workers: 2))
        let port = proxy.port
        let group = DispatchGroup()
        let failures = LockedCounter()
        for c in 0..<8 {
            DispatchQueue.global().async(group: group) {
                do {
                    let client = try RawClient(port: port)
                    for i in 0..<25 {
                        client.send("GET /w/\(c)/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
                        if try client.readResponse().status != 200 { failures.increment() }
                    }
                } catch { failures.increment() }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(backend.requests().count, 200)
        withExtendedLifetime(proxy) {}
    }

    func testProhibitedDestinationIPsAreRefusedBeforeConnecting() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: Self.destinationYAML(backendPort: backend.port))
        // The addresses go from least to most able to leave this machine: 0.0.0.0/8 and an unscoped
        // fe80:: address cannot be connected to, 169.254.169.254 might. The metadata address is only
        // tried once the proxy has shown it refuses the other two, so a missing check never contacts it.
        let cases: [(target: String, host: String)] = [
            ("http://0.0.0.1/", "0.0.0.1"),
            ("http://[fe80::1]/", "[fe80::1]"),
            ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ]
        var allRefused = true
        for (target, host) in cases {
            guard allRefused else {
                XCTFail("\(target): not tried, because an earlier prohibited destination was not refused with 403")
                continue
            }
            let response = try send(proxy, target: target, host: host)
            XCTAssertEqual(response.status, 403, "\(target): body: \(response.text)")
            XCTAssertEqual(response.json?["error"] as? String, "destination_ip_prohibited", "\(target): body: \(response.text)")
            XCTAssertTrue(response.header("Proxy-Status")?.contains("error=destination_ip_prohibited") ?? false,
                          "\(target): Proxy-Status: \(response.header("Proxy-Status") ?? "none")")
            if response.status != 403 || response.json?["error"] as? String != "destination_ip_prohibited" { allRefused = false }
        }
        XCTAssertEqual(backend.requests().count, 0)
    }

    func testLoopbackRouteUpstreamStillWorks() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: Self.destinationYAML(backendPort: backend.port))
        let response = try send(proxy, target: "http://api.test/loop", host: "api.test")
        XCTAssertEqual(response.status, 200, "body: \(response.text)")
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests.first.map { Backend.headerValues($0, "Authorization") }, ["Bearer abc"])
    }

    // MARK: - server-sent events to a real client

    private func events(proxy: ProxyHarness, url: String, cafile: String? = nil) throws -> [String: Any] {
        var arguments = ["python3", Backend.fixtures.appendingPathComponent("sse_client.py").path,
                         "--proxy", String(proxy.port), "--url", url]
        if let cafile { arguments += ["--cafile", cafile] }
        let outcome = try Command.run(arguments, timeout: 60)
        let object = try? JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any]
        return object ?? ["error": outcome.err]
    }

    private func assertEveryEventOnTime(_ result: [String: Any], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result["status"] as? Int, 200, "\(what): \(result)", file: file, line: line)
        XCTAssertEqual(result["events"] as? Int, 20, "\(what): \(result)", file: file, line: line)
        XCTAssertLessThan(result["p99_ms"] as? Double ?? 999, 20, "\(what): \(result)", file: file, line: line)
    }

    /// A response without a length that arrives in pieces (server-sent events, one every 100 ms)
    /// reaches a real client (Python's http.client) piece by piece, with the spool on: each
    /// event's delay from the backend's send to the app's read stays under 20 ms (p99) — no
    /// piece waits in a socket buffer (Nagle, a missing flush) — over plain HTTP and through
    /// interception (OpenSSL both ways). (That the proxy relays each piece at once and never
    /// spools it, without sockets: ``ClientSessionEventStreamTests``.)
    func testEventsArriveAsTheyAreSentOverPlainHTTPAndThroughInterception() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("sse_backend.py"))
        let ca = try TestCA()
        let tls = try FixtureProcess(script: Backend.fixtures.appendingPathComponent("sse_backend.py"),
                                     arguments: ["--tls-cert", ca.localhostCert, "--tls-key", ca.localhostKey])
        let caFile = directory.appendingPathComponent("ca.crt").path
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            spool: {directory: "\(directory.path)", maxBytes: 64MiB}
            intercept: {caCertFile: "\(caFile)"}
            credentials:
              api: {type: static, token: abc}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(plain.port)"
                credential: api
              - host: "localhost:\(tls.port)"
                intercept: true
                credential: api
                caFile: "\(ca.caCert)"
            """)
        for path in ["/sse", "/sse-close"] {
            assertEveryEventOnTime(try events(proxy: proxy, url: "http://api.test\(path)?n=20&interval=100"), "plain \(path)")
            assertEveryEventOnTime(try events(proxy: proxy, url: "https://localhost:\(tls.port)\(path)?n=20&interval=100",
                                              cafile: caFile), "intercepted \(path)")
        }
        XCTAssertEqual(proxy.metrics().spooledResponses, 0, "a client that keeps up is never spooled")
    }

    // MARK: - connection racing (RFC 8305) over the kernel's connects

    /// Records what an upstream connection reports.
    private final class Recorder: UpstreamConnectionOwner {
        func upstreamWanted(_ upstream: UpstreamConnection) {}
        let started = ContinuousClock.now
        var connectedAfter: Duration?
        var ended: UpstreamEnd?
        var endedAfter: Duration?
        func upstreamDidConnect(_ upstream: UpstreamConnection) { connectedAfter = .now - started }
        func upstreamDidRead(_ upstream: UpstreamConnection) {}
        func upstreamDidDrain(_ upstream: UpstreamConnection) {}
        func upstream(_ upstream: UpstreamConnection, didEnd reason: UpstreamEnd) {
            ended = reason
            endedAfter = .now - started
        }
    }

    /// A loopback listener that keeps what each accepted connection sends.
    private final class Sink: ConnectionDelegate {
        private(set) var listener: Listener!
        private var accepted: [any ByteStream] = []
        var received: [UInt8] = []
        var connections: Int { accepted.count }

        init(loop: EventLoop) throws {
            listener = try Listener(address: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { [unowned self] connection in
                connection.delegate = self
                connection.startReading()
                accepted.append(connection)
            }
        }

        func connectionDidRead(_ connection: any ByteStream) {
            received += connection.input.peekBytes(max: connection.input.count)
            connection.input.drain(connection.input.count)
        }

        func connection(_ connection: any ByteStream, didEnd reason: ConnectionEnd) { connection.close() }

        func closeAll() {
            for connection in accepted { connection.close() }
            listener.close()
        }
    }

    /// Runs `loop` until `done` holds (checked every 10 ms) or `limit` passes.
    private func run(_ loop: EventLoop, limit: Duration = .seconds(8), until done: @escaping () -> Bool) {
        let deadline = ContinuousClock.now + limit
        let poll = LoopTimer(on: loop, after: .milliseconds(10), repeating: .milliseconds(10)) {
            if done() || ContinuousClock.now >= deadline { loop.stop() }
        }
        loop.run()
        poll.cancel()
    }

    private func makeUpstream(_ loop: EventLoop, pool: UpstreamPool) -> UpstreamConnection {
        let target = UpstreamTarget(host: "backend.test", port: 80, tls: nil, poolKey: "http://backend.test:80",
                                    allowsLinkLocal: true)
        return UpstreamConnection(id: 0, target: target, pool: pool, loop: loop)
    }

    /// A name whose first address is blackholed (the kernel's connect stays under way) and whose
    /// second answers: the request staged before the race reaches the second address within a
    /// second, once, and the blackholed connect, under way during the race, is closed once the
    /// second wins. (The racing decisions, without sockets: ``AddressRaceStateTests``.)
    func testABlackholedFirstAddressDoesNotHoldUpTheNextOneAndIsClosed() throws {
        let loop = try EventLoop()
        let blackhole = try Blackhole()
        let sink = try Sink(loop: loop)
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        let request = Array("GET / HTTP/1.1\r\nHost: backend.test\r\n\r\n".utf8)
        upstream.output.append(request)
        let before = Blackhole.pendingConnects(toPort: blackhole.port)
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.2", port: blackhole.port), sink.listener.address],
                      timeout: .seconds(5))
        var duringRace = 0
        run(loop) {
            duringRace = max(duringRace, Blackhole.pendingConnects(toPort: blackhole.port))
            return recorder.ended != nil || (recorder.connectedAfter != nil && sink.received.count >= request.count)
        }

        XCTAssertNil(recorder.ended, "the connection failed instead of using the second address")
        let connectedAfter = try XCTUnwrap(recorder.connectedAfter, "never connected")
        XCTAssertLessThan(connectedAfter, .seconds(1), "the blackholed first address delayed the second one")
        XCTAssertEqual(sink.received, request, "the staged request went to the winning connection, once")
        XCTAssertEqual(sink.connections, 1)
        XCTAssertEqual(duringRace, before + 1, "the blackholed attempt was under way during the race")
        XCTAssertEqual(Blackhole.pendingConnects(toPort: blackhole.port), before, "the losing attempt was closed")
        upstream.close()
        sink.closeAll()
    }

    /// A name whose only address is blackholed: the kernel would go on retrying the SYN for
    /// minutes; the connect timeout ends it then, as a connect timeout, and closes the attempt.
    func testOnlyABlackholedAddressFailsWithConnectTimeoutAfterTheTimeout() throws {
        let loop = try EventLoop()
        let blackhole = try Blackhole()
        let pool = UpstreamPool(loop: loop, limit: 8, connectTimeout: .seconds(5), idleTimeout: .seconds(30))
        let upstream = makeUpstream(loop, pool: pool)
        let recorder = Recorder()
        upstream.owner = recorder
        let before = Blackhole.pendingConnects(toPort: blackhole.port)
        upstream.open(addresses: [try SocketAddress(host: "127.0.0.2", port: blackhole.port)], timeout: .milliseconds(1500))
        run(loop) { recorder.ended != nil || recorder.connectedAfter != nil }

        XCTAssertNil(recorder.connectedAfter, "connected to the blackhole?")
        XCTAssertEqual(recorder.ended, .connectTimeout)
        let endedAfter = try XCTUnwrap(recorder.endedAfter)
        XCTAssertGreaterThanOrEqual(endedAfter, .milliseconds(1450))
        XCTAssertLessThan(endedAfter, .seconds(3))
        XCTAssertEqual(Blackhole.pendingConnects(toPort: blackhole.port), before, "the timed-out attempt was closed")
    }
}

/// A thread-safe counter for tests that fan out.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

/// Slow peers, half-closes and early closes that only a kernel shows: a closing response's
/// tail outlives the lingering close for a slow reader, a tunnel relays after the client's
/// half-close, and a client that closes first releases its descriptor at once. (Slow uploads
/// and stalled bodies in memory: ``ClientSessionBodyCollectionTests``.)
final class RobustnessTests: XCTestCase {
    func testSlowReaderOfAClosingResponseStillGetsEverything() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        let client = try RawClient(port: proxy.port, timeout: 20)
        // HTTP/1.0 + chunked upstream body: relayed close-delimited, then the proxy closes.
        let size = 8 * 1024 * 1024
        client.send("GET /download?size=\(size)&mode=chunked HTTP/1.0\r\nHost: api.test\r\n\r\n")
        Thread.sleep(forTimeInterval: 3) // longer than the 2 s linger
        let response = try client.readResponse()
        XCTAssertEqual(response.body.count, size, "the tail of a closing response must not be dropped")
    }

    func testTunnelKeepsRelayingAfterTheClientHalfCloses() throws {
        let backend = try Backend()
        let yaml = ProxyHarness.yaml(backendPort: backend.port) + "\nconnect: {allow: [\"127.0.0.1:\(backend.port)\"]}\n"
        let proxy = try ProxyHarness(yaml: yaml)
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT 127.0.0.1:\(backend.port) HTTP/1.1\r\nHost: 127.0.0.1:\(backend.port)\r\n\r\n")
        XCTAssertEqual(try client.readResponse(head: true).status, 200)
        client.send("GET /through-tunnel HTTP/1.1\r\nHost: x\r\n\r\n")
        client.shutdownWrite()
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 200, "the answer to a request sent before the half-close arrives")
        XCTAssertEqual(response.json?["target"] as? String, "/through-tunnel")
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), [], "nothing injected into tunnels")
    }

    /// A client that closes or resets first (after a keep-alive exchange, or before sending
    /// anything) leaves nothing to linger for: its descriptor is released at once, not after the
    /// lingering close's cap (3 × 2 s), which let closing clients pile up descriptors that no
    /// connection limit counted.
    func testClientThatClosesFirstReleasesItsDescriptorAtOnce() throws {
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port))
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1 }
        // Warm up: the pooled upstream connection exists from now on.
        let first = try RawClient(port: proxy.port)
        first.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try first.readResponse().status, 200)
        first.close()
        Thread.sleep(forTimeInterval: 0.5)
        let baseline = openDescriptors()
        for index in 0..<40 {
            let client = try RawClient(port: proxy.port)
            if index % 2 == 0 {
                client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
                XCTAssertEqual(try client.readResponse().status, 200)
            }
            // Half leave with FIN, half with a reset (RST), each after an exchange or none.
            client.close(reset: index % 4 >= 2)
        }
        let closed = Date()
        while openDescriptors() > baseline && Date().timeIntervalSince(closed) < 10 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let elapsed = Date().timeIntervalSince(closed)
        XCTAssertLessThanOrEqual(openDescriptors(), baseline, "descriptors of closed clients are still open")
        XCTAssertLessThan(elapsed, 1.5, "descriptors were held \(elapsed) s after the clients closed (the linger cap is 6 s)")
    }
}
