import Foundation
import TestSupport

/// The misbehaving test backend (Fixtures/misbehaving_backend.py): a process on 127.0.0.1 that
/// answers each path with a specific protocol fault and logs connections, requests (with the
/// body's length and SHA-256) and when the proxy closed on it.
final class MisbehavingBackend {
    private let fixture: FixtureProcess
    var port: Int { fixture.port }
    var logURL: URL { fixture.file("log.jsonl") }

    /// `receiveBuffer`: the socket receive buffer of every connection it accepts (small:
    /// uploads back up into the proxy quickly).
    init(receiveBuffer: Int? = nil) throws {
        fixture = try FixtureProcess(script: "ProxyTests/Fixtures/misbehaving_backend.py",
                                     arguments: ["{dir}/log.jsonl"] + (receiveBuffer.map { [String($0)] } ?? []))
    }

    /// Every logged event, oldest first.
    func events() -> [[String: Any]] { fixture.jsonLines("log.jsonl") }

    func requests(path: String? = nil) -> [[String: Any]] {
        events().filter { $0["event"] as? String == "request" && (path == nil || $0["path"] as? String == path) }
    }

    func connections() -> Int { events().filter { $0["event"] as? String == "connect" }.count }

    /// When the proxy closed the connection serving `path` (Unix time), once it has.
    func closedAt(path: String, within seconds: Double = 5) -> Double? {
        firstEvent(within: seconds) { $0["event"] as? String == "closed" && $0["path"] as? String == path }?["at"] as? Double
    }

    /// The first logged event that `matches`, waiting up to `seconds` for it.
    func firstEvent(within seconds: Double, where matches: ([String: Any]) -> Bool) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let event = events().first(where: matches) { return event }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }
}
