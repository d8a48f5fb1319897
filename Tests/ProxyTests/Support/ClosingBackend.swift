import Foundation

/// Fixtures/closing_backend.py: answers one request per connection (200 with Content-Length and no
/// `Connection: close`), then closes it; logs every request as JSON lines.
final class ClosingBackend {
    let fixture: FixtureProcess
    let logURL: URL
    var port: Int { fixture.port }

    init() throws {
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("closing-\(UUID().uuidString).jsonl")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        fixture = try FixtureProcess(script: "closing_backend.py", arguments: ["--port", "0", "--log", logURL.path])
    }

    deinit { try? FileManager.default.removeItem(at: logURL) }

    func events() -> [[String: Any]] {
        guard let data = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return data.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    func requests() -> [[String: Any]] { events().filter { $0["event"] as? String == "request" } }

    /// How many times the backend received each target.
    func countsByTarget() -> [String: Int] {
        var counts: [String: Int] = [:]
        for request in requests() { if let target = request["target"] as? String { counts[target, default: 0] += 1 } }
        return counts
    }
}
