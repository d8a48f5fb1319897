import Config
import Credentials
import EventLoop
import Foundation
import Logging
import Proxy
import TokenManager
import XCTest

/// An in-process proxy built from YAML text, listening on 127.0.0.1 with an ephemeral port.
final class ProxyHarness {
    let server: ProxyServer
    let runtime: CredentialRuntime
    let port: Int

    init(yaml: String, environment: [String: String] = [:], logger: Logger? = nil, accessLog: (any AccessLogWriter)? = nil) throws {
        let config = try ConfigLoader.parse(yaml: yaml, file: "test.yaml", environment: environment)
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let runtime = try CredentialRuntime(config: config, environment: environment, logger: logger ?? quiet)
        try runtime.start()
        do {
            server = try ProxyServer(config: config, credentials: runtime.credentials, logger: logger ?? quiet)
        } catch {
            // A proxy that cannot start (a test of its start errors) leaves no credential thread behind.
            runtime.stop()
            throw error
        }
        self.runtime = runtime
        if let shared = runtime.shared { server.limiters.share(through: shared, on: runtime.tokenLoop) }
        server.accessLogWriter = accessLog
        port = try server.start().port
    }

    deinit {
        server.stop()
        server.limiters.stopSharing()
        runtime.stop()
    }

    /// The standard test config: `api.test` → backend with static token `abc`.
    static func yaml(backendPort: Int, otherHosts: String = "deny", workers: Int = 1, extraRoutes: String = "") -> String {
        yaml(upstream: "http://127.0.0.1:\(backendPort)", otherHosts: otherHosts, workers: workers, extraRoutes: extraRoutes)
    }

    /// One route `api.test` → `upstream`, with static token `abc` unless `credential` is false.
    /// - Parameters:
    ///   - tls: extra keys of the route (`caFile: …`).
    ///   - timeouts: the `timeouts:` flow mapping, if any.
    ///   - top: extra top-level lines (`connect: …`).
    ///   - extraRoutes: further route entries, indented as list items.
    static func yaml(upstream: String, tls: String = "", credential: Bool = true, timeouts: String? = nil,
                     otherHosts: String = "deny", workers: Int = 1, top: String = "", extraRoutes: String = "") -> String {
        """
        listen: "127.0.0.1:0"
        workers: \(workers)
        otherHosts: \(otherHosts)
        \(timeouts.map { "timeouts: \($0)" } ?? "")
        \(top)
        credentials:
          api:
            type: static
            token: "abc"
        routes:
          - host: "api.test"
            upstream: "\(upstream)"
        \(tls.isEmpty ? "" : "    \(tls)")
        \(credential ? "    credential: api" : "")
        \(extraRoutes)
        """
    }
}

extension ProxyHarness {
    /// Every worker's counters, merged.
    func metrics() -> ProxyMetrics {
        let box = MetricsBox()
        let done = DispatchSemaphore(value: 0)
        server.collectMetrics { metrics in
            box.set(metrics)
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
        return box.get()
    }

    /// Open upstream connections, whatever their state.
    func upstreamConnections() -> Int {
        metrics().upstreamConnections.values.reduce(0, +)
    }
}

/// Keeps the access records a proxy writes (any worker thread), for assertions.
final class AccessRecords: AccessLogWriter, @unchecked Sendable {
    private let lock = NSLock()
    private var records: [AccessRecord] = []
    func write(_ record: AccessRecord) { lock.lock(); records.append(record); lock.unlock() }
    var all: [AccessRecord] { lock.lock(); defer { lock.unlock() }; return records }
}

/// Hands metrics from a worker thread to the test thread.
private final class MetricsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = ProxyMetrics()
    func set(_ metrics: ProxyMetrics) { lock.lock(); value = metrics; lock.unlock() }
    func get() -> ProxyMetrics { lock.lock(); defer { lock.unlock() }; return value }
}

extension XCTestCase {
    /// A path for an audit file of this test (`audit: {file: …}`), removed when the test ends.
    func auditFilePath() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString).jsonl").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }
}

/// The JSON lines of an audit file once it has `count` of them (records are written as each
/// exchange is accounted, which may come just after its client read the last byte), or what it
/// has after 5 s.
func auditRecords(_ path: String, count: Int) -> [[String: Any]] {
    let deadline = Date().addingTimeInterval(5)
    var records: [[String: Any]] = []
    repeat {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        records = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        if records.count >= count { break }
        Thread.sleep(forTimeInterval: 0.02)
    } while Date() < deadline
    return records
}

