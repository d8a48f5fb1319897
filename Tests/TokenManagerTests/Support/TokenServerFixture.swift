import Foundation
import TestSupport

/// Runs Fixtures/token_server.py on a loopback port for one test.
final class TokenServerFixture {
    private let fixture: FixtureProcess
    var port: Int { fixture.port }

    struct RecordedRequest {
        let method: String
        let path: String
        let headers: [(String, String)]
        let body: String

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    init(control: [String: Any] = [:]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/token_server.py")
        fixture = try FixtureProcess(script: script, arguments: ["--log", "{dir}/requests.jsonl", "--control", "{dir}/control.json"],
                                     quiet: false) {
            try FixtureProcess.writeJSON(control, to: "control.json", in: $0)
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Replaces the server's behaviour (atomically: write then rename).
    func setControl(_ control: [String: Any]) throws { try fixture.writeJSON(control, to: "control.json") }

    var requests: [RecordedRequest] {
        fixture.jsonLines("requests.jsonl").map { object in
            let headers = (object["headers"] as? [[String]] ?? []).map { ($0[0], $0[1]) }
            return RecordedRequest(method: object["method"] as? String ?? "", path: object["path"] as? String ?? "",
                                   headers: headers, body: object["body"] as? String ?? "")
        }
    }

    func stop() { fixture.stop() }
}
