import Foundation
import TestSupport
import XCTest

/// Several `token-sidecar` processes sharing one credential's token through a real
/// `redis-server`: one fetch per token lifetime for the whole fleet, nothing readable in Redis,
/// and the fleet keeps serving when Redis dies or hangs.
///
/// Sizes are the acceptance's by default (10 sidecars, 20 s of load); `FLEET_SIDECARS` and
/// `FLEET_SECONDS` shrink them where time is short.
final class SharedCacheFleetTests: XCTestCase {
    func testFleetFetchesOncePerLifetimeAndStoresNothingReadable() throws {
        let fleetSetup = try sharedFleet(expiresIn: Fleet.lifetime)
        let redis = fleetSetup.redis, tokens = fleetSetup.tokens, config = fleetSetup.config
        let load = FleetLoad()
        let ports = Locked<[Int]>([])
        let loadDone = DispatchSemaphore(value: 0)
        let seconds = Fleet.loadSeconds
        DispatchQueue.global().async {
            load.run(ports: { ports.withLock { $0 } }, threads: 4, seconds: seconds + 2, maxRequests: 400_000)
            loadDone.signal()
        }
        // Cold start under load: the load starts on each sidecar as soon as it listens.
        let fleet = try startFleet(Fleet.sidecarCount, config: config)
        let loadStart = Date().timeIntervalSince1970
        ports.withLock { $0 = fleet.map(\.port) }
        XCTAssertEqual(loadDone.wait(timeout: .now() + seconds + 30), .success)
        let loadEnd = Date().timeIntervalSince1970

        let fetched = fetches(tokens)
        let first = try XCTUnwrap(fetched.first).time
        let coldStart = fetched.filter { $0.time < first + 2.5 }.count
        XCTAssertEqual(coldStart, 1, "a cold start of \(fleet.count) sidecars fetches once")
        let window = fetched.filter { $0.time >= loadStart && $0.time <= loadStart + seconds }.count + 1
        let bound = Int(seconds / (Fleet.lifetime * 0.75)) + 1
        print("fleet of \(fleet.count): \(fetched.count) fetches in \(String(format: "%.1f", loadEnd - first)) s, "
              + "\(window) counting the current one in \(seconds) s of load (bound \(bound)); \(load.recorded.count) requests")
        XCTAssertLessThanOrEqual(window, bound, "one fetch per token lifetime for the whole fleet")
        checkFleetSamples(load.recorded, fetched: fetched)

        // Nothing readable in Redis: no token, secret, password, key or client id in key names or values.
        let dump = try redis.dump()
        XCTAssertFalse(dump.isEmpty, "the fleet writes its token")
        let key = try String(contentsOfFile: fleetSetup.keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        for (name, value) in dump {
            XCTAssertTrue(name.hasPrefix("token-sidecar:"), name)
            for needle in ["tok-", Fleet.secret, Fleet.password, Fleet.clientId, key, String(tokens.port)] {
                XCTAssertFalse(name.contains(needle), "key name \(name) contains a known string")
                XCTAssertFalse(value.contains(needle), "the value of \(name) contains a known string")
            }
        }

        // A value rewritten by hand is never injected.
        let entry = try XCTUnwrap(dump.first { $0.key.contains(":token:") }).key
        try redis.command(["SET", entry, "tok-forged", "PX", "60000"])
        let forged = FleetLoad()
        let fleetPorts = fleet.map(\.port)
        forged.run(ports: { fleetPorts }, threads: 2, seconds: min(seconds / 2, 6), maxRequests: 100_000)
        XCTAssertFalse(forged.recorded.contains { $0.token == "tok-forged" })
        checkFleetSamples(forged.recorded, fetched: fetches(tokens))
        XCTAssertTrue(fleet.contains { $0.text().contains("does not open") }, "the forged entry was noticed")
        assertNoSanitizerReports(fleet)
    }

    /// The token in use revoked during load: exactly one refetch for the whole fleet, and every
    /// request (all replayable GETs) succeeds.
    func testRevocationRefetchesOncePerFleet() throws {
        let fleetSetup = try sharedFleet(expiresIn: 3600)
        let tokens = fleetSetup.tokens, config = fleetSetup.config
        let fleet = try startFleet(Fleet.sidecarCount, config: config)
        let ports = fleet.map(\.port)
        let before = FleetLoad()
        before.run(ports: { ports }, threads: 3, seconds: 2, maxRequests: 50_000)
        XCTAssertEqual(fetches(tokens).count, 1)
        let first = try XCTUnwrap(fetches(tokens).first).token
        let after = FleetLoad()
        after.run(ports: { ports }, threads: 3, seconds: 4, maxRequests: 50_000, path: "/reject?token=\(first)&n=")
        let fetched = fetches(tokens)
        print("revocation across \(fleet.count) sidecars: \(fetched.count - 1) refetch(es), \(after.recorded.count) requests after it")
        XCTAssertEqual(fetched.count, 2, "exactly one refetch per revocation per fleet")
        XCTAssertEqual(after.recorded.filter { $0.status != 200 }.count, 0, "every replayable request succeeds")
        XCTAssertFalse(after.recorded.contains { $0.token == first && $0.status == 200 })

        // Every sidecar's metrics show the shared cache; together they adopted all but the fetched tokens.
        var hits = 0
        var won = 0
        for sidecar in fleet {
            let admin = try XCTUnwrap(SimpleClient(port: sidecar.adminPort))
            admin.send("GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n")
            let metrics = try XCTUnwrap(admin.response()).body
            XCTAssertTrue(metrics.contains("token_sidecar_shared_cache_up{credential=\"idp\"} 1"), metrics)
            hits += Self.sample(metrics, "token_sidecar_shared_cache_reads_total{credential=\"idp\",result=\"hit\"}")
            won += Self.sample(metrics, "token_sidecar_shared_cache_leases_total{credential=\"idp\",outcome=\"won\"}")
        }
        XCTAssertGreaterThanOrEqual(won, 2, "a lease for each fetch (a replica may also win one after the release, then adopt)")
        XCTAssertEqual(hits, 2 * fleet.count - 2, "every other token was adopted")
        assertNoSanitizerReports(fleet)
    }

    private static func sample(_ metrics: String, _ name: String) -> Int {
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) } ?? -1
    }

    /// The comparison the acceptance quotes: the same fleet and load without `sharedCache`
    /// (about 6 fetches per sidecar in 20 s). Measured only when `FLEET_BASELINE=1`.
    func testBaselineWithoutSharedCache() throws {
        guard ProcessInfo.processInfo.environment["FLEET_BASELINE"] == "1" else { throw XCTSkip("set FLEET_BASELINE=1 to measure") }
        let tokens = try FixtureServer.tokenServer(["expires_in": Fleet.lifetime])
        let backend = try FixtureServer.backend()
        let files = try secretFiles()
        let config = try fleetConfig(tokenPort: tokens.port, backendPort: backend.port, redisPort: nil,
                                     keyFile: files.key, passwordFile: files.password)
        let fleet = try startFleet(Fleet.sidecarCount, config: config)
        let ports = fleet.map(\.port)
        let start = Date().timeIntervalSince1970
        let load = FleetLoad()
        load.run(ports: { ports }, threads: 4, seconds: Fleet.loadSeconds, maxRequests: 400_000)
        let fetched = fetches(tokens)
        let window = fetched.filter { $0.time >= start && $0.time <= start + Fleet.loadSeconds }.count + fleet.count
        print("without sharedCache: \(fleet.count) sidecars, \(window) fetches counting each one's current token "
              + "in \(Fleet.loadSeconds) s of load (\(String(format: "%.1f", Double(window) / Double(fleet.count))) per sidecar)")
        checkFleetSamples(load.recorded, fetched: fetched)
    }
}
