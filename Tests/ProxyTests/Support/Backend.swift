import Foundation
import TestSupport

/// The recording test backend (Fixtures/backend.py) as a child process on 127.0.0.1.
final class Backend {
    let fixture: FixtureProcess
    var port: Int { fixture.port }
    var logURL: URL { fixture.file("backend.jsonl") }

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    init() throws {
        fixture = try FixtureProcess(script: "ProxyTests/Fixtures/backend.py", arguments: ["--port", "0", "--log", "{dir}/backend.jsonl"])
    }

    /// Every logged event, in order.
    func events() -> [[String: Any]] { fixture.jsonLines("backend.jsonl") }

    func requests() -> [[String: Any]] { events().filter { $0["event"] as? String == "request" } }
    func connections() -> [[String: Any]] { events().filter { $0["event"] as? String == "connect" } }

    /// Header values of `name` in a logged request.
    static func headerValues(_ request: [String: Any], _ name: String) -> [String] {
        let headers = request["headers"] as? [[String]] ?? []
        return headers.filter { $0.count == 2 && $0[0].lowercased() == name.lowercased() }.map { $0[1] }
    }
}
