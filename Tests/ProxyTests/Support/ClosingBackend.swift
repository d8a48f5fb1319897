import Foundation
import TestSupport

/// Fixtures/closing_backend.py: answers one request per connection (200 with Content-Length and no
/// `Connection: close`), then closes it; logs every request as JSON lines.
final class ClosingBackend {
    let fixture: FixtureProcess
    var port: Int { fixture.port }

    init() throws {
        fixture = try FixtureProcess(script: "ProxyTests/Fixtures/closing_backend.py", arguments: ["--port", "0", "--log", "{dir}/log.jsonl"])
    }

    func events() -> [[String: Any]] { fixture.jsonLines("log.jsonl") }

    func requests() -> [[String: Any]] { events().filter { $0["event"] as? String == "request" } }

    /// How many times the backend received each target.
    func countsByTarget() -> [String: Int] {
        var counts: [String: Int] = [:]
        for request in requests() { if let target = request["target"] as? String { counts[target, default: 0] += 1 } }
        return counts
    }
}
