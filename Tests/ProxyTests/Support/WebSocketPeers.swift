import Foundation
import TestSupport

/// The WebSocket backend of the upgrade tests (Fixtures/ws_backend.py, the `websockets`
/// package's server): accepts a handshake only with a token it knows (`accept`, or the test
/// token server's `tok-N` unless revoked), logs every handshake, echoes messages.
final class WebSocketBackend {
    let fixture: FixtureProcess
    var port: Int { fixture.port }

    init(accept: [String] = [], tlsCert: String? = nil, tlsKey: String? = nil) throws {
        var arguments = ["--log", "{dir}/handshakes.jsonl", "--control", "{dir}/control.json"]
        for token in accept { arguments += ["--accept", token] }
        if let tlsCert, let tlsKey { arguments += ["--tls-cert", tlsCert, "--tls-key", tlsKey] }
        fixture = try FixtureProcess(script: Self.fixtures.appendingPathComponent("ws_backend.py"), arguments: arguments,
                                     quiet: true, python: PeersPython.path)
    }

    /// Refuses these tokens from now on (their handshakes get 401).
    func revoke(_ tokens: [String]) throws { try fixture.writeJSON(["revoked": tokens], to: "control.json") }

    /// Every handshake, oldest first.
    func handshakes() -> [[String: Any]] { fixture.jsonLines("handshakes.jsonl").filter { $0["event"] as? String == "handshake" } }

    /// The close codes the backend received, one per ended connection, oldest first.
    func closeCodes() -> [Int?] {
        fixture.jsonLines("handshakes.jsonl").filter { $0["event"] as? String == "closed" }.map { $0["code"] as? Int }
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
}

/// Runs the WebSocket test client (Fixtures/ws_client.py, the `websockets` package's client)
/// through the proxy and returns the JSON object it printed last.
enum WebSocketClient {
    /// `how`: `connect` (a CONNECT tunnel, as the package does behind a proxy) or `absolute`
    /// (an absolute-form handshake, as aiohttp and Node's agents send).
    static func run(proxyPort: Int, url: String, how: String, scenario: String, cafile: String? = nil,
                    timeout: Int = 90) throws -> [String: Any] {
        var arguments = [PeersPython.path, WebSocketBackend.fixtures.appendingPathComponent("ws_client.py").path,
                         "--proxy", String(proxyPort), "--url", url, "--how", how, "--scenario", scenario]
        if let cafile { arguments += ["--cafile", cafile] }
        let outcome = try Command.run(arguments, timeout: timeout)
        let last = outcome.out.split(separator: "\n").last.map(String.init) ?? ""
        guard let object = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any] else {
            return ["ok": false, "error": "no result (status \(outcome.status)): \(outcome.err.suffix(1500))"]
        }
        return object
    }

    /// Starts the client without waiting for it (the slow-read test measures while it waits).
    static func start(proxyPort: Int, url: String, how: String, scenario: String, output: URL) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [PeersPython.path, WebSocketBackend.fixtures.appendingPathComponent("ws_client.py").path,
                             "--proxy", String(proxyPort), "--url", url, "--how", how, "--scenario", scenario]
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()
        return process
    }
}
