import Crypto
import Foundation
import TestSupport
import XCTest

/// `grant: refresh_token` against a real OAuth server that rotates refresh tokens at every
/// refresh and revokes the access token issued with the old one (django-oauth-toolkit,
/// `ROTATE_REFRESH_TOKEN` with reuse protection: a spent refresh token is refused and revokes
/// its family). Token lifetimes of 3–4 s compress an hour of rotations into a test; the
/// sidecars are real processes, sharing tokens through a real `redis-server`.
final class RefreshTokenFleetTests: XCTestCase {
    private struct Setup {
        let redis: RedisServerProcess?
        let dot: FixtureServer
        let configs: [String]
        let files: [String]
    }

    /// The OAuth server, a Redis (when `shared`), and `count` sidecar configs, each with its own
    /// refresh token file holding the consented refresh token.
    private func setUp(count: Int, lifetime: Int, shared: Bool) throws -> Setup {
        let dot = try FixtureServer(script: "TokenSidecarTests/Fixtures/dot_server.py", arguments: ["{dir}", "--access-lifetime", String(lifetime)],
                                    python: DOTPython.path)
        let initial = try String(contentsOf: dot.file("initial.refresh"), encoding: .utf8)
        let redis = shared ? try RedisServerProcess(password: Fleet.password) : nil
        let secrets = try secretFiles()
        var configs: [String] = [], files: [String] = []
        for index in 0..<count {
            let file = (secrets.key as NSString).deletingLastPathComponent + "/replica-\(index).refresh"
            try initial.write(toFile: file, atomically: true, encoding: .utf8)
            files.append(file)
            let cache = redis.map {
                "sharedCache: {url: \"redis://127.0.0.1:\($0.port)/0\", encryptionKeyFile: \"\(secrets.key)\", passwordFile: \"\(secrets.password)\"}"
            } ?? ""
            configs.append(try writeConfig("""
                listen: "127.0.0.1:0"
                admin: "127.0.0.1:0"
                accessLog: false
                \(cache)
                credentials:
                  idp: {type: oauth2, grant: refresh_token, refreshTokenFile: "\(file)", tokenUrl: "http://127.0.0.1:\(dot.port)/o/token/",
                        clientId: fleet-client, secret: SENTINEL-DOT-SECRET, tokenWait: 5s}
                routes:
                  - host: "api.test"
                    upstream: "http://127.0.0.1:\(dot.port)"
                    credential: idp
                """))
        }
        return Setup(redis: redis, dot: dot, configs: configs, files: files)
    }

    /// The refresh requests the server answered (held and dropped ones apart).
    private func refreshes(_ dot: FixtureServer) -> [[String: Any]] {
        dot.log("token.jsonl").filter { $0["grant_type"] as? String == "refresh_token" }
    }

    private func digest(_ path: String) throws -> String {
        let token = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return Digest.sha256Hex(token).prefix(12).description
    }

    /// Every refresh answered 200, and each used the refresh token the one before issued, once.
    private func checkChain(_ lines: [[String: Any]], startingWith first: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(lines.compactMap { $0["error"] as? String }, [], "no invalid_grant", file: file, line: line)
        XCTAssertEqual(Set(lines.map { $0["status"] as? Int }), [200], file: file, line: line)
        let used = lines.compactMap { $0["used"] as? String }
        XCTAssertEqual(Set(used).count, used.count, "every refresh token used exactly once", file: file, line: line)
        var expected = first
        for entry in lines {
            XCTAssertEqual(entry["used"] as? String, expected, "a refresh used the newest refresh token", file: file, line: line)
            expected = entry["issued"] as? String ?? ""
        }
    }

    func testThreeReplicasShareEachRotationWithoutAFailedRequest() throws {
        let setup = try setUp(count: 3, lifetime: 2, shared: true)
        let first = try digest(setup.files[0])
        let initial = try String(contentsOfFile: setup.files[0], encoding: .utf8)
        // One config per replica: each its own file, at the path its pod would have.
        var replicas = try setup.configs.map { try CapturedSidecar(configPath: $0) }
        // 2 s tokens for 20 s (FLEET_SECONDS; CI runs 10): 10 rotations, an hour of 6-minute tokens.
        let seconds = Fleet.loadSeconds
        let load = FleetLoad()
        let ports = replicas.map(\.port)
        load.run(ports: { ports }, threads: 3, seconds: seconds, maxRequests: 60_000, path: "/api/")
        let samples = load.recorded
        XCTAssertGreaterThan(samples.count, 100)
        let failed = samples.filter { $0.status != 200 }
        XCTAssertEqual(failed.count, 0, "no failed request: \(failed.prefix(5).map(\.status))")
        let lines = refreshes(setup.dot)
        print("refresh-token fleet: \(samples.count) requests, \(lines.count) refreshes in \(seconds) s")
        XCTAssertGreaterThanOrEqual(lines.count, Int(seconds / 2) - 1, "the fleet refreshed each lifetime")
        checkChain(lines, startingWith: first)
        // django-oauth-toolkit revokes the previous access token at each refresh. The replicas
        // refresh together (one under the lease, the others adopt its entry), so a request still
        // carrying the revoked token is rare; when one does, its 401 is replayed (0 failed above).
        print("refresh-token fleet: \(setup.dot.log("api.jsonl").count) requests answered 401 and replayed")
        // Each replica's file holds a token of the chain's end: the newest, or the one before
        // when its replica has not needed the newest yet.
        let newest = lines.suffix(2).compactMap { $0["issued"] as? String }
        for file in setup.files { XCTAssertTrue(newest.contains(try digest(file)), "\(file) holds a recent refresh token") }
        let mode = (try FileManager.default.attributesOfItem(atPath: setup.files[0])[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o600)

        // A replica stopped as Kubernetes stops a pod (SIGTERM: a refresh it has under way is
        // answered and shared before it exits), then restarted from an old file (the consented
        // token, long spent), adopts the fleet's newer sealed one and serves without spending anything.
        XCTAssertTrue(replicas[2].terminate(), "the replica drains and exits on SIGTERM")
        replicas.removeLast()
        try initial.write(toFile: setup.files[2], atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: setup.files[2])
        // The chain's newest token when the replica comes back: its file must end at it or later.
        let atRestart = refreshes(setup.dot).count
        let restarted = try CapturedSidecar(configPath: setup.configs[2])
        let again = FleetLoad()
        let restartedPort = restarted.port
        again.run(ports: { [restartedPort] }, threads: 1, seconds: 3, maxRequests: 200, path: "/api/")
        let againFailed = again.recorded.filter { $0.status != 200 }
        let after = refreshes(setup.dot)
        checkChain(after, startingWith: first)
        let issued = after.compactMap { $0["issued"] as? String }
        let held = try digest(setup.files[2])
        let position = issued.lastIndex(of: held)
        XCTAssertEqual(againFailed.map(\.status), [], "the restarted replica serves every request")
        XCTAssertNotNil(position, "the restarted replica's file holds a refresh token of the fleet's chain")
        XCTAssertGreaterThanOrEqual(position ?? -1, atRestart - 1, "…the one that was newest when it came back, or a later one")
        if !againFailed.isEmpty || (position ?? -1) < atRestart - 1 {
            print("restarted replica's log:\n\(restarted.text())\nrefreshes: \(after.suffix(4))\nfailed at: \(againFailed.map(\.time))")
        }
        restarted.stop()
        replicas.forEach { $0.stop() }
    }

    func testAReplicaKilledWhileItsRefreshIsInFlightLeavesTheFleetAbleToRefresh() throws {
        let setup = try setUp(count: 3, lifetime: 4, shared: true)
        let first = try digest(setup.files[0])
        var replicas = try setup.configs.map { try CapturedSidecar(configPath: $0) }
        let load = FleetLoad()
        let ports = Locked(replicas.map(\.port))
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            load.run(ports: { ports.withLock { $0 } }, threads: 2, seconds: 40, maxRequests: 40_000, path: "/api/")
            done.signal()
        }
        defer { load.stop(); _ = done.wait(timeout: .now() + 15) }
        // Hold the next refresh at the server; kill the replica that sent it, then let the server
        // drop it unprocessed.
        try "".write(to: setup.dot.file("hold"), atomically: true, encoding: .utf8)
        let held = try XCTUnwrap(wait(20) { setup.dot.log("token.jsonl").first { $0["held"] != nil } }, "a refresh was held")
        // The replica that sent it: the one whose connection comes from the held request's port
        // (every replica has connections to the server: the route's upstream is the same one).
        let heldPort = try XCTUnwrap(held["port"] as? Int, "the held request's source port")
        let refresher = try XCTUnwrap(wait(5) { replicas.firstIndex { self.owns($0.process.processIdentifier, port: heldPort, to: setup.dot.port) } },
                                      "the refreshing replica holds the held request's connection")
        kill(replicas[refresher].process.processIdentifier, SIGKILL)
        replicas[refresher].process.waitUntilExit()
        let killedPort = replicas[refresher].port
        ports.withLock { $0.removeAll { $0 == killedPort } }
        try "drop".write(to: setup.dot.file("hold"), atomically: true, encoding: .utf8)
        XCTAssertNotNil(wait(5) { setup.dot.log("token.jsonl").first { $0["dropped"] != nil } })
        try FileManager.default.removeItem(at: setup.dot.file("hold"))
        replicas.remove(at: refresher)
        // The lease of the killed replica expires (fetch timeout + 1 s); a survivor takes it and
        // refreshes with the refresh token the server never processed.
        let recovered = wait(25) { self.refreshes(setup.dot).first { $0["used"] as? String == held["held"] as? String } }
        XCTAssertNotNil(recovered, "the held refresh token was used again, by a survivor")
        let recoveredAt = Date().timeIntervalSince1970
        Thread.sleep(forTimeInterval: 4)
        checkChain(refreshes(setup.dot), startingWith: first)
        let late = load.recorded.filter { $0.time > recoveredAt + 1 }
        XCTAssertFalse(late.isEmpty)
        XCTAssertEqual(late.filter { $0.status != 200 }.count, 0, "the survivors serve again")
    }

    /// A rolling restart sends SIGTERM while a refresh may be under way. The token server may
    /// already have rotated the refresh token: the process waits for the answer, writes the new
    /// refresh token to its file and to the fleet's cache, and only then exits, so a replica
    /// started from the old (spent) file adopts the new one instead of breaking the chain.
    func testSIGTERMDuringARefreshExitsOnlyOnceTheRotatedTokenIsSaved() throws {
        let setup = try setUp(count: 2, lifetime: 2, shared: true)
        let first = try digest(setup.files[0])
        let initial = try String(contentsOfFile: setup.files[1], encoding: .utf8)
        let leaving = try CapturedSidecar(configPath: setup.configs[0])
        XCTAssertNotNil(wait(10) { self.get(leaving.adminPort, "/readyz")?.status == 200 ? true : nil }, "ready with the first token")
        // The next refresh (at 80 % of 2 s) is held at the server.
        try "".write(to: setup.dot.file("hold"), atomically: true, encoding: .utf8)
        let held = try XCTUnwrap(wait(10) { setup.dot.log("token.jsonl").first { $0["held"] != nil } }, "a refresh was held")
        let signalled = Date()
        kill(leaving.process.processIdentifier, SIGTERM)
        Thread.sleep(forTimeInterval: 1)
        XCTAssertTrue(leaving.process.isRunning, "still running while its refresh is unanswered")
        try FileManager.default.removeItem(at: setup.dot.file("hold"))
        XCTAssertNotNil(wait(10) { leaving.process.isRunning ? nil : true }, "exits by itself once the answer is saved")
        XCTAssertLessThan(Date().timeIntervalSince(signalled), 10, "well before the drain timeout")
        XCTAssertTrue(leaving.text().contains("waiting for a refresh token rotation"), leaving.text())
        let lines = refreshes(setup.dot)
        checkChain(lines, startingWith: first)
        XCTAssertNotNil(lines.last { $0["used"] as? String == held["held"] as? String }?["issued"], "the held refresh was answered")
        // The newest token the server issued: the held refresh's, or one after it when that answer
        // came so late (a slow machine) that its token was due again before the exit.
        let newest = try XCTUnwrap(lines.last?["issued"] as? String)
        XCTAssertEqual(try digest(setup.files[0]), newest, "the leaving replica's file holds the newest rotated token")
        // The next replica starts from the consented (spent) token and adopts the fleet's one.
        XCTAssertEqual(try digest(setup.files[1]), Digest.sha256Hex(initial.trimmingCharacters(in: .whitespacesAndNewlines)).prefix(12).description)
        let next = try CapturedSidecar(configPath: setup.configs[1])
        defer { next.stop() }
        let load = FleetLoad()
        let port = next.port
        load.run(ports: { [port] }, threads: 1, seconds: 3, maxRequests: 100, path: "/api/")
        XCTAssertGreaterThan(load.recorded.count, 0)
        XCTAssertEqual(load.recorded.filter { $0.status != 200 }.map(\.status), [], "the next replica serves every request")
        checkChain(refreshes(setup.dot), startingWith: first)
    }

    func testARevokedRefreshTokenMakesTheReplicaUnreadyQuietlyUntilTheFileIsReplaced() throws {
        let setup = try setUp(count: 1, lifetime: 2, shared: false)
        let sidecar = try CapturedSidecar(configPath: setup.configs[0])
        XCTAssertNotNil(wait(10) { self.get(sidecar.adminPort, "/readyz")?.status == 200 ? true : nil }, "ready with the first token")
        XCTAssertEqual(post(setup.dot.port, "/control/revoke"), 200)
        // Within one refresh (2 s lifetime, refreshed at 80 %): invalid_grant, not ready.
        XCTAssertNotNil(wait(6) { self.get(sidecar.adminPort, "/readyz")?.status == 503 ? true : nil }, "unready within one refresh")
        let tokens = wait(6) { self.get(sidecar.adminPort, "/tokens").flatMap { $0.body.contains("invalid_grant") ? $0.body : nil } }
        XCTAssertNotNil(tokens, "/tokens says invalid_grant: \(get(sidecar.adminPort, "/tokens")?.body ?? "")")
        let before = refreshes(setup.dot).count
        // The app keeps calling meanwhile: its requests are refused, and none of them asks the
        // server again (the schedule of the retries is SharedTokenDriverTests' and ManagedCredentialTests').
        // Each waits for a token (tokenWait, 5 s) before its 503: twenty, sent 0.25 s apart.
        var clients: [SimpleClient] = []
        for _ in 0..<20 {
            guard let client = SimpleClient(port: sidecar.port) else { break }
            client.send("GET http://api.test/o/ HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
            clients.append(client)
            Thread.sleep(forTimeInterval: 0.25)
        }
        let statuses = clients.map { $0.response()?.status ?? 0 }
        XCTAssertEqual(statuses, Array(repeating: 503, count: 20), "the app's requests kept coming and were refused")
        let storm = refreshes(setup.dot).count - before
        XCTAssertLessThanOrEqual(storm, 1, "a refused refresh token is retried at the backoff cap (60 s), not in a storm")
        let metrics = get(sidecar.adminPort, "/metrics")?.body ?? ""
        let rejected = try PrometheusTextParser.parse(metrics).flatMap(\.samples).first {
            $0.name == "token_sidecar_token_fetches_total" && $0.labels["credential"] == "idp" && $0.labels["result"] == "credentials_rejected"
        }
        XCTAssertGreaterThanOrEqual(rejected?.value ?? 0, 1, "the metric counts the refusal")
        XCTAssertTrue(sidecar.text().contains("invalid_grant"), "a log line says why")
        // A new consent: the operator replaces the file; the sidecar uses it at once.
        XCTAssertEqual(post(setup.dot.port, "/control/issue"), 200)
        let fresh = try String(contentsOf: setup.dot.file("fresh.refresh"), encoding: .utf8)
        try fresh.write(toFile: setup.files[0], atomically: true, encoding: .utf8)
        XCTAssertNotNil(wait(6) { self.get(sidecar.adminPort, "/readyz")?.status == 200 ? true : nil }, "ready again")
        XCTAssertNotEqual(try digest(setup.files[0]), Digest.sha256Hex(fresh.trimmingCharacters(in: .whitespacesAndNewlines)).prefix(12).description,
                          "the fresh token was rotated and the file rewritten")
        XCTAssertFalse(sidecar.text().contains(fresh.trimmingCharacters(in: .whitespacesAndNewlines)), "never the refresh token in a log")
    }

    // MARK: - Helpers

    /// Polls `probe` every 50 ms for at most `seconds`.
    private func wait<T>(_ seconds: Double, _ probe: () -> T?) -> T? {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if let value = probe() { return value }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return nil
    }

    /// Whether process `pid` has an established TCP connection to 127.0.0.1:`port` (`ss`).
    /// Whether process `pid` holds the connection from local port `port` to the server at `server`.
    private func owns(_ pid: Int32, port: Int, to server: Int) -> Bool {
        guard let outcome = try? Command.run(["ss", "-Htnp", "state", "established", "src", "127.0.0.1:\(port)",
                                              "dst", "127.0.0.1:\(server)"]) else { return false }
        return outcome.out.contains("pid=\(pid),")
    }

    private func get(_ port: Int, _ path: String) -> (status: Int, headers: [String: String], body: String)? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send("GET \(path) HTTP/1.1\r\nHost: admin\r\n\r\n")
        return client.response()
    }

    private func post(_ port: Int, _ path: String) -> Int? {
        guard let client = SimpleClient(port: port) else { return nil }
        client.send("POST \(path) HTTP/1.1\r\nHost: dot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        return client.response()?.status
    }
}
