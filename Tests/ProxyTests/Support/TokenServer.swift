import Foundation
import TestSupport

/// The OAuth test token server (Tests/TokenManagerTests/Fixtures/token_server.py) on 127.0.0.1:
/// behaviour switched at runtime through a control file, every request logged with its time.
final class TokenServer {
    let fixture: FixtureProcess
    var port: Int { fixture.port }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("TokenManagerTests/Fixtures/token_server.py")
    }

    init(control settings: [String: Any] = [:], tlsCert: String? = nil, tlsKey: String? = nil) throws {
        var arguments = ["--log", "{dir}/requests.jsonl", "--control", "{dir}/control.json"]
        if let tlsCert, let tlsKey { arguments += ["--tls-cert", tlsCert, "--tls-key", tlsKey] }
        fixture = try FixtureProcess(script: TokenServer.script, arguments: arguments, quiet: false) {
            try FixtureProcess.writeJSON(settings, to: "control.json", in: $0)
        }
    }

    /// Replaces the behaviour atomically (write, then rename).
    func setControl(_ control: [String: Any]) throws { try fixture.writeJSON(control, to: "control.json") }

    /// Every request the server received, in order.
    func requests() -> [[String: Any]] { fixture.jsonLines("requests.jsonl") }
}
