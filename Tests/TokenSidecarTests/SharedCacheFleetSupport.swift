import Foundation
import TestSupport
import XCTest

/// Sizes and known strings of the shared-cache fleet tests. The sizes are the acceptance's by
/// default (10 sidecars, 20 s of load); `FLEET_SIDECARS` and `FLEET_SECONDS` shrink them.
enum Fleet {
    static let sidecarCount = Int(ProcessInfo.processInfo.environment["FLEET_SIDECARS"] ?? "") ?? 10
    static let loadSeconds = Double(ProcessInfo.processInfo.environment["FLEET_SECONDS"] ?? "") ?? 20
    static let lifetime = 4.0
    static let secret = "SENTINEL-CLIENT-SECRET"
    static let password = "SENTINEL-REDIS-PASSWORD"
    static let clientId = "fleet-client-id"
}

extension XCTestCase {
    /// A config for one sidecar of the fleet (nil `redisPort`: no shared cache).
    func fleetConfig(tokenPort: Int, backendPort: Int, redisPort: Int?, keyFile: String, passwordFile: String,
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
          idp: {type: oauth2, tokenUrl: "http://127.0.0.1:\(tokenPort)/token", clientId: \(Fleet.clientId), secret: \(Fleet.secret), tokenWait: 5s}
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backendPort)"
            credential: idp
        """)
    }

    /// What every shared-cache fleet test starts with: a real redis-server (with a password),
    /// the recording token server issuing tokens for `expiresIn` seconds, the echo backend, and
    /// one sidecar config that shares tokens through that Redis. Each stays up as long as the
    /// returned value does.
    func sharedFleet(expiresIn: Any) throws -> SharedFleet {
        let redis = try RedisServerProcess(password: Fleet.password)
        let tokens = try FixtureServer.tokenServer(["expires_in": expiresIn])
        let backend = try FixtureServer.backend()
        let files = try secretFiles()
        let config = try fleetConfig(tokenPort: tokens.port, backendPort: backend.port, redisPort: redis.port,
                                     keyFile: files.key, passwordFile: files.password)
        return SharedFleet(redis: redis, tokens: tokens, backend: backend, config: config, keyFile: files.key)
    }

    func secretFiles() throws -> (key: String, password: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key").path
        let password = directory.appendingPathComponent("password").path
        try Data((0..<32).map { UInt8($0 * 5 + 1) }).base64EncodedString().write(toFile: key, atomically: true, encoding: .utf8)
        try Fleet.password.write(toFile: password, atomically: true, encoding: .utf8)
        return (key, password)
    }

    /// Starts `count` sidecars at once (a cold start of the fleet).
    func startFleet(_ count: Int, config: String) throws -> [CapturedSidecar] {
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
    func fetches(_ tokens: FixtureServer) -> [(time: Double, token: String)] {
        tokens.log("requests.jsonl").compactMap { line in
            guard let time = line["time"] as? Double, let token = line["token"] as? String else { return nil }
            return (time, token)
        }
    }

    /// Requests that failed, and requests that reached the backend with a token past its lifetime.
    func checkFleetSamples(_ samples: [FleetLoad.Sample], fetched: [(time: Double, token: String)],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(samples.isEmpty, file: file, line: line)
        let failed = samples.filter { $0.status != 200 }
        XCTAssertEqual(failed.count, 0, "failed requests: \(failed.prefix(5))", file: file, line: line)
        let issued = Dictionary(fetched.map { ($0.token, $0.time) }, uniquingKeysWith: { first, _ in first })
        let expired = samples.filter { sample in
            guard let token = sample.token, let at = issued[token] else { return sample.status == 200 }
            return sample.time > at + Fleet.lifetime
        }
        XCTAssertEqual(expired.count, 0, "requests with an expired or unknown token: \(expired.prefix(5))", file: file, line: line)
    }

    /// No sidecar of the fleet printed a sanitizer report (the ASan and TSan runs build them instrumented).
    func assertNoSanitizerReports(_ fleet: [CapturedSidecar], file: StaticString = #filePath, line: UInt = #line) {
        for sidecar in fleet {
            XCTAssertFalse(sidecar.text().contains("Sanitizer"), "a sanitizer report:\n\(sidecar.text().prefix(3000))", file: file, line: line)
        }
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

/// The servers and the sidecar config of one shared-cache fleet test (see `sharedFleet`).
struct SharedFleet {
    let redis: RedisServerProcess
    let tokens: FixtureServer
    let backend: FixtureServer
    let config: String
    /// The sealing key the sidecars read (a test checks Redis holds nothing of it).
    let keyFile: String
}
