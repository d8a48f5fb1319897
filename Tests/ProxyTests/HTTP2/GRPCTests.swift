import Foundation
import TestSupport
import XCTest

/// gRPC end to end with gRPC's own implementation (grpcio, C-core) on both sides: a client that
/// points its channel at the sidecar (prior knowledge) or sets `grpc_proxy` (CONNECT, then h2c
/// in the tunnel), and a server behind a route with `upstreamProtocol: h2c`. Every call carries
/// the injected token (never the app's own), and statuses, trailers, streams and deadlines
/// arrive as the server sent them.
final class GRPCTests: XCTestCase {
    private var server: FixtureProcess!
    private var proxy: ProxyHarness!
    private var directory: URL!

    override func setUpWithError() throws {
        server = try FixtureProcess(script: "ProxyTests/Fixtures/grpc_peer.py", arguments: ["server"], python: PeersPython.path)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("grpc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(directory.appendingPathComponent("ca.crt").path)}
            credentials:
              orders: {type: static, token: "abc"}
            routes:
              - host: "orders.test"
                upstream: "http://127.0.0.1:\(server.port)"
                upstreamProtocol: h2c
                credential: orders
              - host: "orders.test:50051"
                intercept: true
                upstream: "http://127.0.0.1:\(server.port)"
                upstreamProtocol: h2c
                credential: orders
              - host: "legacy.test"
                upstream: "http://127.0.0.1:\(server.port)"
                credential: orders
              - host: "down.test"
                upstream: "http://127.0.0.1:\(try Nginx.freePort())"
                upstreamProtocol: h2c
                credential: orders
            """)
    }

    override func tearDown() {
        proxy = nil
        server = nil
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The keys of an oauth2 credential `orders` fetching from `tokens`, indented under it.
    private static func oauth2(_ tokens: TokenServer) -> String {
        """
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token"
                clientId: "client-1"
                secret: "s3cret"
        """
    }

    /// Runs the grpcio client: `target` is `direct:<authority>` or `proxy:<host:port>`;
    /// `authorization`: the app's own metadata instead of `Bearer app-own`.
    private func client(_ target: String, _ mode: String, _ count: Int? = nil, authorization: String? = nil) throws -> [String] {
        let script = FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/grpc_peer.py").path
        let result = try Command.run([PeersPython.path, script, "client", String(proxy.port), target, mode] + (count.map { [String($0)] } ?? []),
                                     environment: authorization.map { ["GRPC_PEER_AUTHORIZATION": $0] } ?? [:], timeout: 60)
        XCTAssertEqual(result.status, 0, result.err)
        return result.out.split(separator: "\n").map(String.init)
    }

    func testAUnaryCallGetsTheInjectedTokenAndItsTrailers() throws {
        let lines = try client("direct:orders.test", "unary")
        XCTAssertEqual(lines.count, 2, "\(lines)")
        XCTAssertTrue(lines.first?.hasPrefix("auth=Bearer abc peer=ipv4:127.0.0.1:") == true, "\(lines)")
        XCTAssertTrue(lines.first?.hasSuffix(" via=2 token-sidecar") == true, "the call came over HTTP/2: \(lines)")
        XCTAssertEqual(lines.last, "trailer x-order=42")
    }

    /// A gRPC call's metadata is rewritten by the same edit as an HTTP/1.1 head: a placement
    /// replaces the app's own `authorization`, a placeholder is swapped on its credential's route
    /// only, and a placeholder bound elsewhere fails the call as PERMISSION_DENIED, never sent.
    func testPlacementsAndPlaceholdersRewriteACallsMetadata() throws {
        let placeholder = "tsp_grpcPlaceholder000000000001"
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              orders: {type: static, token: "abc", placeholder: "\(placeholder)"}
              other: {type: static, token: "xyz"}
            routes:
              - {host: "orders.test", upstream: "http://127.0.0.1:\(server.port)", upstreamProtocol: h2c, credential: orders}
              - {host: "placed.test", upstream: "http://127.0.0.1:\(server.port)", upstreamProtocol: h2c, credential: other,
                 inject: {header: Authorization, format: "token {token}"}}
            """)
        XCTAssertEqual(try client("direct:orders.test", "unary", authorization: "Bearer \(placeholder)").first?.components(separatedBy: " peer=").first,
                       "auth=Bearer abc", "the placeholder swapped where the app put it")
        XCTAssertEqual(try client("direct:placed.test", "unary").first?.components(separatedBy: " peer=").first,
                       "auth=token xyz", "the placement replaced the app's own")
        let refused = try client("direct:placed.test", "unary", authorization: "Bearer \(placeholder)")
        XCTAssertEqual(refused.first?.hasPrefix("error PERMISSION_DENIED"), true, "\(refused)")
        XCTAssertFalse(refused.joined().contains(placeholder))
    }

    func testAClientBehindGrpcProxyIsServedThroughAPlaintextTunnel() throws {
        let lines = try client("proxy:orders.test:50051", "unary")
        XCTAssertTrue(lines.first?.hasPrefix("auth=Bearer abc peer=") == true, "\(lines)")
        XCTAssertEqual(lines.last, "trailer x-order=42")
    }

    func testStreamsStatusesAndLargeUploadsPassThrough() throws {
        XCTAssertEqual(try client("direct:orders.test", "stream"), ["update 0", "update 1", "update 2"])
        XCTAssertEqual(try client("direct:orders.test", "missing"), ["error NOT_FOUND no such order"])
        XCTAssertEqual(try client("direct:orders.test", "upload"), ["messages=30 bytes=3000000"])
    }

    func testADeadlineEndsTheCallAtTheClientsTime() throws {
        let lines = try client("direct:orders.test", "deadline")
        XCTAssertEqual(lines.count, 1)
        let seconds = Double(lines.first?.split(separator: " ").last ?? "9") ?? 9
        XCTAssertTrue(lines.first?.hasPrefix("error DEADLINE_EXCEEDED after ") == true, "\(lines)")
        XCTAssertLessThan(seconds, 2, "\(lines)")
    }

    func testTwoHundredConcurrentCallsShareOneUpstreamConnection() throws {
        let lines = try client("direct:orders.test", "many", 200)
        XCTAssertEqual(lines.first, "calls 200 failures 0 peers 1", "\(lines)")
    }

    func testACallToAnHTTP1RouteFailsClosedAsUnavailable() throws {
        let lines = try client("direct:legacy.test", "unary")
        XCTAssertEqual(lines, ["error UNAVAILABLE the route's upstream speaks HTTP/1.1; a gRPC call needs HTTP/2 end to end (upstreamProtocol: h2 or h2c)"])
    }

    /// A route's rules decide each call by its method path: an allowed call goes through, any
    /// other fails as PERMISSION_DENIED and never reaches the server.
    func testRouteRulesDecideEachCall() throws {
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              orders: {type: static, token: "abc"}
            routes:
              - {host: "orders.test", upstream: "http://127.0.0.1:\(server.port)", upstreamProtocol: h2c, credential: orders,
                 rules: [{name: get-orders, methods: [POST], paths: ["/test.Orders/Get"]}]}
              - {host: "denied.test", upstream: "http://127.0.0.1:\(server.port)", upstreamProtocol: h2c, credential: orders,
                 rules: [{name: only-watch, methods: [POST], paths: ["/test.Orders/Watch"]}]}
            """)
        XCTAssertEqual(try client("direct:orders.test", "unary").first?.components(separatedBy: " peer=").first, "auth=Bearer abc")
        let refused = try client("direct:denied.test", "unary")
        XCTAssertEqual(refused.first?.hasPrefix("error PERMISSION_DENIED route denied.test:80: no rule allows POST /test.Orders/Get"), true,
                       "\(refused)")
    }

    /// A route's budget: the call over it fails RESOURCE_EXHAUSTED, and the audit file has one
    /// record per call (the refused one `denied`, `budget_exhausted`), over HTTP/2 as grpcio sends.
    func testLimitsRefuseACallAsResourceExhaustedAndEachCallIsAudited() throws {
        let file = auditFilePath()
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            audit: {file: "\(file)"}
            credentials:
              orders: {type: static, token: "SENTINEL-GRPC-TOKEN"}
            routes:
              - {host: "orders.test", upstream: "http://127.0.0.1:\(server.port)", upstreamProtocol: h2c, credential: orders,
                 limits: {budget: {requests: 1, per: hour}}}
            """)
        XCTAssertTrue(try client("direct:orders.test", "unary").first?.hasPrefix("auth=Bearer SENTINEL-GRPC-TOKEN") == true)
        let refused = try client("direct:orders.test", "unary")
        XCTAssertEqual(refused.first?.hasPrefix("error RESOURCE_EXHAUSTED route orders.test:80: budget spent for this period"), true,
                       "\(refused)")
        let records = auditRecords(file, count: 2)
        XCTAssertFalse(try String(contentsOfFile: file, encoding: .utf8).contains("SENTINEL-GRPC-TOKEN"))
        XCTAssertEqual(records.map { $0["decision"] as? String }, ["allowed", "denied"])
        XCTAssertEqual(records.map { $0["reason"] as? String }, [nil, "budget_exhausted"])
        XCTAssertEqual(records.map { $0["path"] as? String }, ["/test.Orders/Get", "/test.Orders/Get"])
        XCTAssertEqual(records.map { $0["protocol"] as? String }, ["HTTP/2", "HTTP/2"])
    }

    func testTheSidecarsOwnErrorsAreGRPCStatuses() throws {
        // No route: PERMISSION_DENIED, as the 403 it is over HTTP/1.1.
        let unrouted = try client("direct:nowhere.test", "unary")
        XCTAssertEqual(unrouted.count, 1)
        XCTAssertTrue(unrouted.first?.hasPrefix("error PERMISSION_DENIED no route is configured for nowhere.test") == true, "\(unrouted)")
        // An upstream that refuses connections: UNAVAILABLE, with the reason a person can read.
        let down = try client("direct:down.test", "unary")
        XCTAssertEqual(down.count, 1)
        XCTAssertTrue(down.first?.hasPrefix("error UNAVAILABLE ") == true, "\(down)")
        XCTAssertTrue(down.first?.contains("refused") == true, "\(down)")
    }

    func testARevokedTokenIsReplacedOnceAndEveryCallSucceeds() throws {
        // The server takes only the token server's tokens and fails the revoked one
        // UNAUTHENTICATED, trailers-only: gRPC's 401. The sidecar refetches once and replays.
        let tokens = try TokenServer()
        let gated = try FixtureProcess(script: "ProxyTests/Fixtures/grpc_peer.py", arguments: ["server", "--gate", "tok-", "{dir}/revoked"],
                                       python: PeersPython.path)
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              orders:
            \(Self.oauth2(tokens))
            routes:
              - host: "orders.test"
                upstream: "http://127.0.0.1:\(gated.port)"
                upstreamProtocol: h2c
                credential: orders
            """)
        XCTAssertEqual(try client("direct:orders.test", "many", 20).first, "calls 20 failures 0 peers 1")
        try "tok-1\n".write(to: gated.directory.appendingPathComponent("revoked"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try client("direct:orders.test", "many", 20).first, "calls 20 failures 0 peers 1")
        XCTAssertEqual(tokens.requests().count, 2, "the first token, then exactly one refetch")
        XCTAssertEqual(proxy.metrics().upstreamUnauthorized["orders"].map { $0 > 0 }, true, "the rejections were counted")
        // UNAUTHENTICATED in the trailers, after a message the app already has: passed through
        // as it is, and the token refetched all the same; the next call has the new one.
        XCTAssertEqual(try client("direct:orders.test", "expiring"), ["first", "error UNAUTHENTICATED token expired mid-call"])
        let deadline = Date().addingTimeInterval(5)
        while tokens.requests().count < 3 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(tokens.requests().count, 3, "one refetch for the trailing UNAUTHENTICATED")
        XCTAssertTrue(try client("direct:orders.test", "unary").first?.hasPrefix("auth=Bearer tok-3 ") == true)
    }

    func testEveryKindOfCallThroughHTTPSProxyToAnInterceptingRoute() throws {
        // grpcio as a TLS client through https_proxy, trusting the sidecar's CA as C-core reads
        // it (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH); the route is auto to a TLS grpcio server, which a
        // gRPC call reaches over HTTP/2 only.
        // The server takes only the token server's tokens (exactly one per call).
        let ca = try TestCA()
        let tokens = try TokenServer()
        let tlsServer = try FixtureProcess(script: "ProxyTests/Fixtures/grpc_peer.py",
                                           arguments: ["server", "--tls", ca.localhostCert, ca.localhostKey, "--dir", "{dir}",
                                                       "--gate", "tok-", "{dir}/revoked"],
                                           python: PeersPython.path)
        let sidecarCA = directory.appendingPathComponent("sidecar-ca.crt").path
        proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(sidecarCA)}
            credentials:
              orders:
            \(Self.oauth2(tokens))
            routes:
              - host: "orders.test:443"
                intercept: true
                upstream: "https://127.0.0.1:\(tlsServer.port)"
                caFile: \(ca.caCert)
                credential: orders
            """)
        let script = FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/grpc_peer.py").path
        let result = try Command.run([PeersPython.path, script, "client", String(proxy.port), "tls:orders.test:443", "suite"],
                                     environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)",
                                                   "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": sidecarCA],
                                     timeout: 120)
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out.split(separator: "\n").map(String.init), [
            "unary auth=Bearer tok-1",
            "stream 1000 last=update 999",
            "upload messages=1000 bytes=5000",
            "chat 100 ok=True",
            "big ok=True",
            "deadline DEADLINE_EXCEEDED within2s=True",
            "cancel CANCELLED after=5",
            "custom FAILED_PRECONDITION order 42 is closed: früh x-reason=closed x-data-bin=000102",
        ], result.err)
        // The server saw both abandoned calls end (the app's RST_STREAM reached it as one).
        let deadline = Date().addingTimeInterval(5)
        func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: tlsServer.directory.appendingPathComponent(name).path) }
        while !(exists("slow-cancelled") && exists("watch-cancelled")) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertTrue(exists("slow-cancelled"), "the deadline's cancellation reached the server")
        XCTAssertTrue(exists("watch-cancelled"), "the client's cancel reached the server")
    }
}
