import Foundation
import TestSupport
import XCTest

/// The token in use revoked at the backend while requests flow: replaced within one token
/// round trip, one token fetch per revocation, every replayable request answered 200.
final class RevocationTests: XCTestCase {
    private func yaml(tokens: TokenServer, backend: MisbehavingBackend) -> String {
        """
        listen: "127.0.0.1:0"
        workers: 2
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token"
            clientId: "client-1"
            secret: "s3cret"
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
        """
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
        XCTAssertEqual(statuses.filter { $0 != 200 }.count, 0, "no request failed")
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
