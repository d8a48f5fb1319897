import Foundation
import TestSupport
import XCTest

/// Fixture processes of the other test targets, started from here by their path under Tests/.
typealias FixtureServer = FixtureProcess

extension FixtureProcess {
    /// Lines of a JSON-lines log file in the fixture's directory.
    func log(_ name: String) -> [[String: Any]] { jsonLines(name) }
}

extension FixtureServer {
    /// The OAuth test token server (TokenManagerTests/Fixtures/token_server.py), its control file
    /// set to `control` and its requests logged to `requests.jsonl`.
    static func tokenServer(_ control: [String: Any] = [:]) throws -> FixtureServer {
        let server = try FixtureServer(script: "TokenManagerTests/Fixtures/token_server.py",
                                       arguments: ["--log", "{dir}/requests.jsonl", "--control", "{dir}/control.json"])
        try server.writeJSON(control, to: "control.json")
        return server
    }

    /// The recording test backend (ProxyTests/Fixtures/backend.py), logging to `log` when given.
    static func backend(log: String? = nil) throws -> FixtureServer {
        try FixtureServer(script: "ProxyTests/Fixtures/backend.py",
                          arguments: ["--port", "0"] + (log.map { ["--log", "{dir}/\($0)"] } ?? []))
    }
}

/// A config with the admin port and one route `api.test` → `upstream` carrying the static
/// token `abc`; `extra` holds further top-level lines (`drainTimeout: 20s`, ...).
func staticRouteConfig(upstream: String, admin: Bool = true, extra: [String] = []) -> String {
    (["listen: \"127.0.0.1:0\""] + (admin ? ["admin: \"127.0.0.1:0\""] : []) + extra + [
        "credentials:",
        "  api: {type: static, token: \"abc\"}",
        "routes:",
        "  - host: \"api.test\"",
        "    upstream: \"\(upstream)\"",
        "    credential: api",
    ]).joined(separator: "\n")
}

/// The environment a sidecar child process gets: exactly `environment`, plus the sanitizer
/// options of this test process (the ASan and TSan runs set them, and a child built with a
/// sanitizer must read the same suppressions).
func childEnvironment(_ environment: [String: String]) -> [String: String] {
    let inherited = ProcessInfo.processInfo.environment.filter {
        $0.key.hasSuffix("SAN_OPTIONS") || $0.key.hasSuffix("SAN_SYMBOLIZER_PATH")
    }
    return environment.merging(inherited) { own, _ in own }
}

/// The outcome of running the binary.
struct Outcome { var status: Int32; var out: String; var err: String }

extension XCTestCase {
    /// The `token-sidecar` binary built next to this test bundle.
    static var sidecarBinary: URL {
        var directory = Bundle.main.bundleURL
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directory = bundle.bundleURL.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("token-sidecar")
    }

    /// Runs the binary to completion.
    func runSidecar(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        let process = Process()
        process.executableURL = Self.sidecarBinary
        process.arguments = arguments
        process.environment = childEnvironment(environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a })
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
    }

    /// Writes a config file that is removed after the test.
    func writeConfig(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString).yaml")
        try text.write(to: url, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }
}
