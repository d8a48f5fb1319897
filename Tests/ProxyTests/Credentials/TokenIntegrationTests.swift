import Foundation
import TestSupport
import XCTest

// The tests that need a real token server (Fixtures/token_server.py) behind a running proxy:
// the token manager's timing, single flight and 401 refetch, the MCA token request, https token
// servers (TLS with OpenSSL), and revocation under concurrent load.

/// The token manager behind the proxy, against a local token server over real sockets.
final class TokenIntegrationTests: XCTestCase {
    private func yaml(tokenPort: Int, backendPort: Int, extra: String = "", tokenWait: String = "5s") -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokenPort)/oauth/token"
            clientId: "client-1"
            secret: "s3cret"
            scope: "read write"
            tokenWait: \(tokenWait)
        \(extra)
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: partner
        """
    }

    func testColdStartFiveHundredConcurrentRequestsShareOneTokenFetch() throws {
        let tokens = try TokenServer(control: ["delay": 0.5])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: yaml(tokenPort: tokens.port, backendPort: backend.port))
        var clients: [RawClient] = []
        for i in 0..<500 {
            let client = try RawClient(port: proxy.port, timeout: 20)
            client.send("GET /cold/\(i) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            clients.append(client)
        }
        for client in clients {
            XCTAssertEqual(try client.readResponse().status, 200)
        }
        XCTAssertEqual(tokens.requests().count, 1, "single flight: one token request for 500 waiting requests")
        let requests = backend.requests()
        XCTAssertEqual(requests.count, 500)
        XCTAssertTrue(requests.allSatisfy { Backend.headerValues($0, "Authorization") == ["Bearer tok-1"] })
    }

    func testShortLivedTokensRefreshAheadAndAreNeverUsedExpired() throws {
        let tokens = try TokenServer(control: ["expires_in": 4])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: tokenYAML(tokens, backend))
        let client = try RawClient(port: proxy.port)
        let start = Date()
        var slowest = 0.0
        var count = 0
        while Date().timeIntervalSince(start) < 12 && count < 3000 {
            let sent = Date()
            client.send("GET /load/\(count) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try client.readResponse().status, 200)
            slowest = max(slowest, Date().timeIntervalSince(sent))
            count += 1
            Thread.sleep(forTimeInterval: 0.02)
        }
        let issued = Dictionary(uniqueKeysWithValues: tokens.requests().compactMap { r -> (String, Double)? in
            guard let token = r["token"] as? String, let time = r["time"] as? Double else { return nil }
            return (token, time)
        })
        // ≈ one fetch per 3.2 s (80 % of 4 s) over 12 s: 4–5 fetches (three refreshes ahead
        // at least), not one per request.
        XCTAssertTrue((3...6).contains(issued.count), "token requests: \(issued.count)")
        for request in backend.requests() {
            let header = Backend.headerValues(request, "Authorization").first ?? ""
            let token = String(header.dropFirst("Bearer ".count))
            let issuedAt = try XCTUnwrap(issued[token], "unknown token \(token)")
            let arrived = try XCTUnwrap(request["time"] as? Double)
            XCTAssertLessThan(arrived - issuedAt, 4.0, "a request reached the backend with an expired token")
        }
        XCTAssertLessThan(slowest, 1.0, "no request may wait for a refresh")
    }

    private func tokenYAML(_ tokens: TokenServer, _ backend: Backend, tokenWait: String = "5s") -> String {
        yaml(tokenPort: tokens.port, backendPort: backend.port, tokenWait: tokenWait)
    }

    func testTokenServerOutageUsesLastTokenThen503ThenRecovers() throws {
        let tokens = try TokenServer(control: ["expires_in": 5])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: tokenYAML(tokens, backend, tokenWait: "1s"))
        let client = try RawClient(port: proxy.port)
        client.send("GET /warm HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        try tokens.setControl(["status": 500])
        // Windows are measured from when the token was issued (the server logs the time): it is
        // usable for 4.5 s of its 5 s, whatever the start-up took on a slow machine.
        let issuedAt = try XCTUnwrap(tokens.requests().first?["time"] as? Double)
        var statuses: [(Double, Int, String?)] = []
        var served = 0
        // Until 8 s: after the 6 s mark the token has expired. (Not longer: each failed refresh
        // doubles the next one's backoff ceiling, full jitter, and the recovery below waits for
        // the next attempt — after 12 s of outage that took 14 to 59 s of a CI run.)
        while Date().timeIntervalSince1970 - issuedAt < 8 && served < 2000 {
            let c = try RawClient(port: proxy.port)
            c.send("GET /outage HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let response = try c.readResponse()
            statuses.append((Date().timeIntervalSince1970 - issuedAt, response.status, response.header("Retry-After")))
            served += 1
            Thread.sleep(forTimeInterval: 0.05)
        }
        let early = statuses.filter { $0.0 < 4.0 }
        XCTAssertFalse(early.isEmpty)
        XCTAssertTrue(early.allSatisfy { $0.1 == 200 }, "the last good token keeps working while the server fails")
        let late = statuses.filter { $0.0 > 6 }
        XCTAssertFalse(late.isEmpty)
        XCTAssertTrue(late.allSatisfy { $0.1 == 503 && $0.2 != nil }, "503 with Retry-After once the token expired")
        let attempts = tokens.requests().count - 1
        XCTAssertGreaterThan(attempts, 1)
        XCTAssertLessThan(attempts, 20, "backing off, not one token request per client request (\(served) requests)")

        try tokens.setControl(["expires_in": 60])
        let recovery = Date()
        var recovered = false
        while Date().timeIntervalSince(recovery) < 70 {
            let c = try RawClient(port: proxy.port)
            c.send("GET /after HTTP/1.1\r\nHost: api.test\r\n\r\n")
            if try c.readResponse().status == 200 { recovered = true; break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        XCTAssertTrue(recovered, "requests succeed again after the token server recovers, without a restart")
    }

    func testFiftyConcurrent401sCauseOneRefetchAndEachIsReplayedOnce() throws {
        let tokens = try TokenServer()
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: tokenYAML(tokens, backend))
        let warm = try RawClient(port: proxy.port)
        warm.send("GET /warm HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try warm.readResponse().status, 200)
        var clients: [RawClient] = []
        for i in 0..<50 {
            let client = try RawClient(port: proxy.port)
            let body = String(format: "payload-%02d", i)
            // The 401s are delayed so that all fifty carry tok-1 before the first rejection arrives.
            client.send("POST /reject?token=tok-1&delay_ms=500&i=\(i) HTTP/1.1\r\nHost: api.test\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            clients.append(client)
        }
        for client in clients {
            let response = try client.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["body_len"] as? Int, 10, "the replay carries the original body")
        }
        XCTAssertEqual(tokens.requests().count, 2, "one initial fetch and exactly one refetch")
        let rejected = backend.requests().filter { ($0["target"] as? String ?? "").hasPrefix("/reject") }
        XCTAssertEqual(rejected.count, 100, "each request sent twice: once rejected, once replayed")
        XCTAssertEqual(rejected.filter { Backend.headerValues($0, "Authorization") == ["Bearer tok-2"] }.count, 50)
    }

    func testMCARequestIsExactlyWhatTheSDKSent() throws {
        let tokens = try TokenServer()
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: """
        listen: "127.0.0.1:0"
        credentials:
          mca:
            type: mca
            serverUrl: "http://127.0.0.1:\(tokens.port)/imf-authserver/"
            tenantId: "tenant-7"
            clientId: "client-7"
            secret: "secret-7"
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: mca
        """)
        let client = try RawClient(port: proxy.port)
        client.send("GET /mca HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let request = try XCTUnwrap(tokens.requests().first)
        XCTAssertEqual(request["method"] as? String, "POST")
        XCTAssertEqual(request["path"] as? String, "/imf-authserver/authorization/v1/apps/tenant-7/token")
        let headers = request["headers"] as? [[String]] ?? []
        func header(_ name: String) -> String? { headers.first { $0[0].lowercased() == name }?[1] }
        XCTAssertEqual(header("authorization"), "Basic " + Data("client-7:secret-7".utf8).base64EncodedString())
        XCTAssertEqual(header("content-type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(request["body"] as? String, "grant_type=client_credentials")
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
    }
}

// MARK: - TLS to the token server (was TokenServerTLSTests.swift)

/// https token servers: verified with the credential's caFile; a bad certificate means the
/// secret is never sent.
final class TokenServerTLSTests: XCTestCase {
    private func yaml(tokenURL: String, caFile: String, backendPort: Int) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "\(tokenURL)"
            clientId: "client-tls"
            secret: "SENTINEL-TLS-SECRET"
            caFile: "\(caFile)"
            tokenWait: 2s
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: partner
        """
    }

    func testHTTPSTokenServerWorksWithCAFile() throws {
        let ca = try TestCA()
        let tokens = try TokenServer(tlsCert: ca.localhostCert, tlsKey: ca.localhostKey)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "https://localhost:\(tokens.port)/oauth/token",
                                                caFile: ca.caCert, backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /secure HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(tokens.requests().count, 1)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
    }

    func testBadCertificateMeansTheSecretIsNeverSent() throws {
        let ca = try TestCA()
        // The server presents a certificate for other.test while the URL names localhost.
        let tokens = try TokenServer(tlsCert: ca.otherCert, tlsKey: ca.otherKey)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "https://localhost:\(tokens.port)/oauth/token",
                                                caFile: ca.caCert, backendPort: backend.port))
        let client = try RawClient(port: proxy.port)
        client.send("GET /secure HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 503, "no token can be obtained")
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(tokens.requests().count, 0, "the token server must record no request: nothing was sent")
        XCTAssertEqual(backend.requests().count, 0)
    }
}

// MARK: - revocation under load (was RevocationTests.swift)

/// The token in use revoked at the backend while requests flow: replaced within one token
/// round trip, one token fetch per revocation, every replayable request answered 200.
final class RevocationTests: XCTestCase {
    private func yaml(tokens: TokenServer, backend: MisbehavingBackend) -> String {
        partnerYAML(tokens: tokens, backend: backend, workers: 2)
    }

    func testARevokedTokenIsReplacedAtOnceAndEveryReplayableRequestSucceeds() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend))
        let load = RevocationLoad(port: proxy.port, clients: 3, maxRequestsPerClient: 5000)
        load.start()
        defer { load.stop() }
        let admin = try RawClient(port: proxy.port)
        let deadline = ContinuousClock.now + .seconds(30)
        func until(_ condition: () -> Bool) -> Bool {
            while !condition() {
                if ContinuousClock.now > deadline || load.finished { return false }
                usleep(5_000)
            }
            return true
        }

        XCTAssertTrue(until { load.served(with: "Bearer tok-1") >= 30 }, "the load runs with the first token")
        // Twice, well within unauthorizedRefetchInterval (10 s): the second revocation is handled
        // at once too, because requests succeeded with the token it revokes.
        for (revoked, next) in [("tok-1", "tok-2"), ("tok-2", "tok-3")] {
            // Revoked while the three clients keep sending it (through the proxy: the token it injects).
            admin.send("GET /revoke HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try admin.readResponse().status, 200)
            XCTAssertTrue(until { load.served(with: "Bearer \(next)") >= 30 }, "\(revoked) replaced by \(next)")
        }
        load.stop()

        let statuses = load.statuses
        XCTAssertGreaterThan(statuses.count, 90)
        XCTAssertEqual(statuses.filter { $0 != 200 }, [], "no request failed")
        XCTAssertEqual(tokens.requests().count, 3, "one token fetch at start and one per revocation")
        let rejected = Int(proxy.metrics().upstreamUnauthorized["partner"] ?? 0)
        XCTAssertGreaterThanOrEqual(rejected, 2, "requests met each revoked token and were replayed")
        let sent = backend.requests(path: "/revocable").count
        XCTAssertEqual(sent, statuses.count + rejected, "each 401 cost exactly one replay")
    }
}

/// Clients that each send `GET /revocable` over one keep-alive connection until stopped,
/// recording every status and the token the backend saw.
private final class RevocationLoad: @unchecked Sendable {
    private let port: Int
    private let clients: Int
    private let maxRequestsPerClient: Int
    private let lock = NSLock()
    private var results: [(status: Int, authorization: String?)] = []
    private var stopped = false
    private var running = 0
    private let group = DispatchGroup()

    init(port: Int, clients: Int, maxRequestsPerClient: Int) {
        self.port = port
        self.clients = clients
        self.maxRequestsPerClient = maxRequestsPerClient
    }

    func start() {
        for _ in 0..<clients {
            locked { running += 1 }
            group.enter()
            Thread.detachNewThread { [self] in
                defer { locked { running -= 1 }; group.leave() }
                guard let client = try? RawClient(port: port, timeout: 10) else { return record(-1, nil) }
                for _ in 0..<maxRequestsPerClient where !locked({ stopped }) {
                    client.send("GET /revocable HTTP/1.1\r\nHost: api.test\r\n\r\n")
                    guard let response = try? client.readResponse() else { return record(-1, nil) }
                    record(response.status, response.json?["authorization"] as? String)
                }
            }
        }
    }

    /// Stops the clients and waits for them (bounded by their socket timeouts).
    func stop() {
        locked { stopped = true }
        _ = group.wait(timeout: .now() + 15)
    }

    /// Whether every client has ended (stopped, out of requests, or failed).
    var finished: Bool { locked { running == 0 } }

    var statuses: [Int] { locked { results.map(\.status) } }

    func served(with authorization: String) -> Int {
        locked { results.filter { $0.status == 200 && $0.authorization == authorization }.count }
    }

    private func record(_ status: Int, _ authorization: String?) { locked { results.append((status, authorization)) } }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// Upstream 401s against the real token manager and a token server: a backend that rejects
/// everything never makes the proxy storm the token server, and requests are not delayed
/// while a 401's refetch runs. (The replay itself, in every framing: ``ClientSessionReplayTests``.)
final class UnauthorizedStormTests: XCTestCase {
    private func yaml(tokens: TokenServer, backend: MisbehavingBackend, extra: String = "") -> String {
        partnerYAML(tokens: tokens, backend: backend, workers: 1, extra: extra)
    }

    func testABackendThatRejectsEverythingDoesNotStormTheTokenServer() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend,
                                                extra: "    unauthorizedRefetchInterval: 2s"))
        let seconds = 5.0
        let deadline = Date().addingTimeInterval(seconds)
        let results = ResultCounter()
        let port = proxy.port
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            guard let client = try? RawClient(port: port, timeout: 10) else { results.add(0); return }
            var count = 0
            while Date() < deadline && count < 2000 {
                client.send("GET /401-always HTTP/1.1\r\nHost: api.test\r\n\r\n")
                guard let response = try? client.readResponse() else { results.add(-1); return }
                results.add(response.status)
                count += 1
            }
        }
        let statuses = results.all()
        print("401 storm: \(statuses.count) requests, \(tokens.requests().count) token fetches in \(seconds) s")
        XCTAssertGreaterThan(statuses.count, 100)
        XCTAssertEqual(Set(statuses), [401], "every request answered with the backend's 401, never 503/504")
        // The first token; the refetch its first 401 starts at once; then, the tokens being
        // rejected before any success, refetches 1 s and 2 s (the 2 s interval caps it) apart.
        XCTAssertLessThanOrEqual(tokens.requests().count, 5)
        XCTAssertGreaterThanOrEqual(Int(proxy.metrics().upstreamUnauthorized["partner"] ?? 0), statuses.count,
                                    "every 401 counted (a replay's second 401 too)")
    }

    func testRequestsAreNotDelayedWhileA401RefetchRuns() throws {
        let tokens = try TokenServer()
        let backend = try MisbehavingBackend()
        let proxy = try ProxyHarness(yaml: yaml(tokens: tokens, backend: backend))
        let warm = try RawClient(port: proxy.port)
        warm.send("GET /ok HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertEqual(try warm.readResponse().status, 200)
        try tokens.setControl(["delay": 1.5])
        let rejected = try RawClient(port: proxy.port)
        rejected.send("GET /401-always HTTP/1.1\r\nHost: api.test\r\n\r\n")
        Thread.sleep(forTimeInterval: 0.2)  // the refetch is running now
        for index in 0..<5 {
            let started = Date()
            warm.send("GET /ok?n=\(index) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try warm.readResponse().status, 200)
            XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "the current token stays in use")
        }
        XCTAssertEqual(Set(backend.requests(path: "/ok").compactMap { $0["authorization"] as? String }), ["Bearer tok-1"])
        // The held request is replayed with the new token and its second 401 is passed on.
        XCTAssertEqual(try rejected.readResponse().status, 401)
        XCTAssertEqual(backend.requests(path: "/401-always").compactMap { $0["authorization"] as? String },
                       ["Bearer tok-1", "Bearer tok-2"])
    }
}

/// Statuses collected from concurrent clients.
private final class ResultCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [Int] = []
    func add(_ status: Int) { lock.lock(); statuses.append(status); lock.unlock() }
    func all() -> [Int] { lock.lock(); defer { lock.unlock() }; return statuses }
}

/// Route `api.test` → `backend` with the oauth2 credential `partner` of `tokens`, on `workers`
/// loops; `extra`: more lines under `credentials.partner` (indented four spaces).
private func partnerYAML(tokens: TokenServer, backend: MisbehavingBackend, workers: Int, extra: String = "") -> String {
    """
    listen: "127.0.0.1:0"
    workers: \(workers)
    credentials:
      partner:
        type: oauth2
        tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token"
        clientId: "client-1"
        secret: "s3cret"
    \(extra)
    routes:
      - host: "api.test"
        upstream: "http://127.0.0.1:\(backend.port)"
        credential: partner
    """
}
