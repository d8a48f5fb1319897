import Foundation
import TestSupport
import XCTest

/// A budget shared by three sidecar processes through a real `redis-server`: the fleet admits
/// what the budget allows, within 2 %, and when Redis is killed mid-run each sidecar keeps the
/// budget locally — every request is answered 200 or 429, none fails.
final class FleetBudgetTests: XCTestCase {
    private func fleetConfig(redis: Int, backend: Int, requests: Int) throws -> String {
        let secrets = try secretFiles()
        return try writeConfig("""
            listen: "127.0.0.1:0"
            admin: "127.0.0.1:0"
            accessLog: false
            sharedCache: {url: "redis://127.0.0.1:\(redis)/0", encryptionKeyFile: "\(secrets.key)", passwordFile: "\(secrets.password)"}
            credentials:
              api: {type: static, token: "budget-token"}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(backend)"
                credential: api
                limits: {budget: {requests: \(requests), per: hour}}
            """)
    }

    func testThreeSidecarsHoldOneBudget() throws {
        let redis = try RedisServerProcess(password: Fleet.password)
        let backend = try FixtureServer.backend()
        let budget = 3000
        let config = try fleetConfig(redis: redis.port, backend: backend.port, requests: budget)
        // A period boundary during the run would start a new budget: not within the last minute of an hour.
        let intoHour = Int(Date().timeIntervalSince1970) % 3600
        if intoHour > 3540 { Thread.sleep(forTimeInterval: Double(3600 - intoHour + 1)) }
        let fleet = try (0..<3).map { _ in try CapturedSidecar(configPath: config) }
        let ports = fleet.map(\.port)
        let load = FleetLoad()
        load.run(ports: { ports }, threads: 6, seconds: 8, maxRequests: 60_000, path: "/budget/")
        let samples = load.recorded
        let admitted = samples.filter { $0.status == 200 }.count
        print("fleet budget \(budget): \(admitted) admitted of \(samples.count) requests by 3 sidecars")
        XCTAssertEqual(samples.filter { $0.status != 200 && $0.status != 429 }.map(\.status), [], "only 200 and 429")
        XCTAssertGreaterThan(samples.count, budget * 2, "the load went well past the budget")
        XCTAssertEqual(Double(admitted), Double(budget), accuracy: Double(budget) * 0.02, "the fleet holds the budget within 2 %")
        XCTAssertFalse(try redis.dump().contains { $0.value.contains("budget-token") }, "no token in Redis")
        fleet.forEach { $0.stop() }
    }

    func testRedisKilledMidRunEachSidecarKeepsTheBudgetLocally() throws {
        let redis = try RedisServerProcess(password: Fleet.password)
        let backend = try FixtureServer.backend()
        let config = try fleetConfig(redis: redis.port, backend: backend.port, requests: 600)
        let fleet = try (0..<3).map { _ in try CapturedSidecar(configPath: config) }
        let ports = fleet.map(\.port)
        let load = FleetLoad()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            load.run(ports: { ports }, threads: 3, seconds: 6, maxRequests: 30_000, path: "/budget/")
            done.signal()
        }
        Thread.sleep(forTimeInterval: 2)
        redis.kill()
        let killedAt = Date().timeIntervalSince1970
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let samples = load.recorded
        let after = samples.filter { $0.time > killedAt + 0.5 }
        print("Redis killed: \(samples.count) requests, \(after.count) after the kill: \(after.filter { $0.status == 200 }.count) admitted")
        XCTAssertEqual(samples.filter { $0.status != 200 && $0.status != 429 }.map(\.status), [], "no request fails other than with 429")
        XCTAssertGreaterThan(after.filter { $0.status == 429 }.count, 0, "the budget still holds without Redis")
        XCTAssertLessThanOrEqual(samples.filter { $0.status == 200 }.count, 600 * 3, "each sidecar at most the whole budget")
        let status = try XCTUnwrap(fleet.first.flatMap { sidecar -> String? in
            guard let client = SimpleClient(port: sidecar.adminPort) else { return nil }
            client.send("GET / HTTP/1.1\r\nHost: admin\r\nAccept: application/json\r\n\r\n")
            return client.response()?.body
        })
        XCTAssertTrue(status.contains("fleet store unavailable"), status)
        fleet.forEach { $0.stop() }
    }
}
