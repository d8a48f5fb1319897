import Foundation
import XCTest

/// Several `token-sidecar` processes sharing one credential's token through a real
/// `redis-server`: one fetch per token lifetime for the whole fleet, nothing readable in Redis,
/// and the fleet keeps serving when Redis dies or hangs.
///
/// Sizes are the acceptance's by default (10 sidecars, 20 s of load); `FLEET_SIDECARS` and
/// `FLEET_SECONDS` shrink them where time is short.
final class SharedCacheFleetTests: XCTestCase {
    private static let sidecarCount = Int(ProcessInfo.processInfo.environment["FLEET_SIDECARS"] ?? "") ?? 10
    private static let loadSeconds = Double(ProcessInfo.processInfo.environment["FLEET_SECONDS"] ?? "") ?? 20
    private static let lifetime = 4.0
    private static let secret = "SENTINEL-CLIENT-SECRET"
    private static let password = "SENTINEL-REDIS-PASSWORD"
    private static let clientId = "fleet-client-id"

    /// A config for one sidecar of the fleet (nil `redisPort`: no shared cache).
    private func fleetConfig(tokenPort: Int, backendPort: Int, redisPort: Int?, keyFile: String, passwordFile: String,
                             timeout: String = "250ms") throws -> String {
        let shared = redisPort.map {
            "sharedCache: {url: \"redis://127.0.0.1:\($0)/0\", encryptionKeyFile: \"\(keyFile)\", passwordFile: \"\(passwordFile)\", timeout: \(timeout)}"
        } ?? ""
        return try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        accessLog: false
        \(shared)
        credentials:
          idp: {type: oauth2, tokenUrl: "http://127.0.0.1:\(tokenPort)/token", clientId: \(Self.clientId), secret: \(Self.secret), tokenWait: 5s}
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: idp
        """)
    }

    private func secretFiles() throws -> (key: String, password: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key").path
        let password = directory.appendingPathComponent("password").path
        try Data((0..<32).map { UInt8($0 * 5 + 1) }).base64EncodedString().write(toFile: key, atomically: true, encoding: .utf8)
        try Self.password.write(toFile: password, atomically: true, encoding: .utf8)
        return (key, password)
    }

    /// Starts `count` sidecars at once (a cold start of the fleet).
    private func startFleet(_ count: Int, config: String) throws -> [CapturedSidecar] {
        let started = Locked([CapturedSidecar?](repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let sidecar = try? CapturedSidecar(configPath: config)
            started.withLock { $0[index] = sidecar }
        }
        let fleet = started.withLock { $0 }.compactMap { $0 }
        XCTAssertEqual(fleet.count, count, "every sidecar started")
        return fleet
    }

    /// Fetch times (seconds since 1970) and the token each fetch returned.
    private func fetches(_ tokens: FixtureServer) -> [(time: Double, token: String)] {
        tokens.log("requests.jsonl").compactMap { line in
            guard let time = line["time"] as? Double, let token = line["token"] as? String else { return nil }
            return (time, token)
        }
    }

    /// Requests that failed, and requests that reached the backend with a token past its lifetime.
    private func check(_ samples: [FleetLoad.Sample], fetched: [(time: Double, token: String)],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(samples.isEmpty, file: file, line: line)
        let failed = samples.filter { $0.status != 200 }
        XCTAssertEqual(failed.count, 0, "failed requests: \(failed.prefix(5))", file: file, line: line)
        let issued = Dictionary(fetched.map { ($0.token, $0.time) }, uniquingKeysWith: { first, _ in first })
        let expired = samples.filter { sample in
            guard let token = sample.token, let at = issued[token] else { return sample.status == 200 }
            return sample.time > at + Self.lifetime
        }
        XCTAssertEqual(expired.count, 0, "requests with an expired or unknown token: \(expired.prefix(5))", file: file, line: line)
    }

    func testFleetFetchesOncePerLifetimeAndStoresNothingReadable() throws {
        let redis = try RedisServerProcess(password: Self.password)
        let tokens = try FixtureServer.tokenServer(["expires_in": Self.lifetime])
        let backend = try FixtureServer.backend()
        let files = try secretFiles()
        let config = try fleetConfig(tokenPort: tokens.port, backendPort: backend.port, redisPort: redis.port,
                                     keyFile: files.key, passwordFile: files.password)
        let load = FleetLoad()
        let ports = Locked<[Int]>([])
        let loadDone = DispatchSemaphore(value: 0)
        let seconds = Self.loadSeconds
        DispatchQueue.global().async {
            load.run(ports: { ports.withLock { $0 } }, threads: 4, seconds: seconds + 2, maxRequests: 400_000)
            loadDone.signal()
        }
        // Cold start under load: the load starts on each sidecar as soon as it listens.
        let fleet = try startFleet(Self.sidecarCount, config: config)
        let loadStart = Date().timeIntervalSince1970
        ports.withLock { $0 = fleet.map(\.port) }
        XCTAssertEqual(loadDone.wait(timeout: .now() + seconds + 30), .success)
        let loadEnd = Date().timeIntervalSince1970

        let fetched = fetches(tokens)
        let first = try XCTUnwrap(fetched.first).time
        let coldStart = fetched.filter { $0.time < first + 2.5 }.count
        XCTAssertEqual(coldStart, 1, "a cold start of \(fleet.count) sidecars fetches once")
        let window = fetched.filter { $0.time >= loadStart && $0.time <= loadStart + seconds }.count + 1
        let bound = Int(seconds / (Self.lifetime * 0.75)) + 1
        print("fleet of \(fleet.count): \(fetched.count) fetches in \(String(format: "%.1f", loadEnd - first)) s, "
              + "\(window) counting the current one in \(seconds) s of load (bound \(bound)); \(load.recorded.count) requests")
        XCTAssertLessThanOrEqual(window, bound, "one fetch per token lifetime for the whole fleet")
        check(load.recorded, fetched: fetched)

        // Nothing readable in Redis: no token, secret, password, key or client id in key names or values.
        let dump = try redis.dump()
        XCTAssertFalse(dump.isEmpty, "the fleet writes its token")
        let key = try String(contentsOfFile: files.key, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        for (name, value) in dump {
            XCTAssertTrue(name.hasPrefix("token-sidecar:"), name)
            for needle in ["tok-", Self.secret, Self.password, Self.clientId, key, String(tokens.port)] {
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
        check(forged.recorded, fetched: fetches(tokens))
        XCTAssertTrue(fleet.contains { $0.text().contains("does not open") }, "the forged entry was noticed")
    }
}

/// A lock-protected value for test threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
