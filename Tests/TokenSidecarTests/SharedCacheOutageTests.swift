import Foundation
import TestSupport
import XCTest

/// The fleet when Redis dies, comes back, or hangs: requests keep being served (each sidecar
/// fetches for itself), and sharing resumes when Redis answers again.
final class SharedCacheOutageTests: XCTestCase {
    private static let count = Fleet.sidecarCount

    func testRedisKilledThenRestarted() throws {
        let fleetSetup = try sharedFleet(expiresIn: Fleet.lifetime)
        let redis = fleetSetup.redis, tokens = fleetSetup.tokens, config = fleetSetup.config
        let fleet = try startFleet(Self.count, config: config)
        let ports = fleet.map(\.port)
        let phase = max(Fleet.loadSeconds / 2, 5)
        let load = FleetLoad()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            load.run(ports: { ports }, threads: 3, seconds: phase * 3 + Fleet.lifetime + 2.5, maxRequests: 300_000)
            done.signal()
        }
        Thread.sleep(forTimeInterval: phase)
        let killedAt = Date().timeIntervalSince1970
        redis.kill()
        Thread.sleep(forTimeInterval: phase)
        let restartedAt = Date().timeIntervalSince1970
        try redis.start()
        XCTAssertEqual(done.wait(timeout: .now() + phase * 2 + 30), .success)
        let endedAt = Date().timeIntervalSince1970

        let fetched = fetches(tokens)
        checkFleetSamples(load.recorded, fetched: fetched)
        let shared = fetched.filter { $0.time < killedAt }.count
        let alone = fetched.filter { $0.time >= killedAt && $0.time < restartedAt }.count
        // Sharing resumes once every sidecar's next refresh has gone through Redis again.
        let settleAt = restartedAt + Fleet.lifetime + 2.5
        let resumed = fetched.filter { $0.time >= settleAt && $0.time < endedAt }.count
        let perLifetime = { (seconds: Double) in Int(seconds / (Fleet.lifetime * 0.75)) + 1 }
        print("fleet of \(fleet.count): \(shared) fetches before the kill, \(alone) in \(phase) s without Redis, "
              + "\(resumed) in the last \(String(format: "%.1f", endedAt - settleAt)) s after the restart")
        XCTAssertLessThanOrEqual(shared, perLifetime(phase) + 1)
        XCTAssertGreaterThan(alone, perLifetime(phase), "without Redis each sidecar fetches for itself")
        XCTAssertLessThanOrEqual(resumed, perLifetime(endedAt - settleAt) + 1, "sharing resumed")
        XCTAssertTrue(fleet.allSatisfy { $0.text().contains("shared token cache unavailable") })
        XCTAssertTrue(fleet.contains { $0.text().contains("shared token cache answers again") })
        assertNoSanitizerReports(fleet)
    }

    func testRedisThatNeverAnswers() throws {
        let silent = try FixtureServer(script: "TokenManagerTests/Fixtures/silent_server.py")
        let tokens = try FixtureServer.tokenServer(["expires_in": Fleet.lifetime])
        let backend = try FixtureServer.backend()
        let files = try secretFiles()
        let config = try fleetConfig(tokenPort: tokens.port, backendPort: backend.port, redisPort: silent.port,
                                     keyFile: files.key, passwordFile: files.password)
        let fleet = try startFleet(min(Self.count, 3), config: config)
        let ports = fleet.map(\.port)
        let load = FleetLoad()
        load.run(ports: { ports }, threads: 3, seconds: Fleet.lifetime * 2, maxRequests: 100_000)
        checkFleetSamples(load.recorded, fetched: fetches(tokens))
        let slowest = load.recorded.map(\.seconds).max() ?? 0
        print("hung Redis: \(load.recorded.count) requests, slowest \(String(format: "%.3f", slowest)) s, \(fetches(tokens).count) fetches")
        XCTAssertLessThan(slowest, 5, "within tokenWait")
        assertNoSanitizerReports(fleet)
    }

    /// A backend that rejects every token: the fleet, sharing, still makes at most 10 token
    /// fetches in 20 s (the bound of one sidecar without sharing; proportionally less in less time).
    func testBackendRejectingEverythingDoesNotStormTheTokenServer() throws {
        let fleetSetup = try sharedFleet(expiresIn: 3600)
        let tokens = fleetSetup.tokens, config = fleetSetup.config
        let fleet = try startFleet(Self.count, config: config)
        let ports = fleet.map(\.port)
        let seconds = min(Fleet.loadSeconds, 20)
        let load = FleetLoad()
        load.run(ports: { ports }, threads: 3, seconds: seconds, maxRequests: 200_000, path: "/status/401?n=")
        let fetched = fetches(tokens).count
        // The first fetch, the first refetch at once, then at most 4 refetches per 10 s (20 s: 10).
        let bound = 2 + Int((8 * seconds / 20).rounded(.up))
        print("backend rejecting everything: \(fetched) fetches by \(fleet.count) sharing sidecars in \(seconds) s (bound \(bound)); "
              + "\(load.recorded.count) requests")
        XCTAssertLessThanOrEqual(fetched, bound)
        XCTAssertTrue(load.recorded.allSatisfy { $0.status == 401 }, "the backend's 401s are passed on")
        assertNoSanitizerReports(fleet)
    }
}
