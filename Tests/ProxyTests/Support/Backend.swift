import Foundation
import XCTest

/// The recording test backend (Fixtures/backend.py) as a child process on 127.0.0.1.
final class Backend {
    let process = Process()
    let port: Int
    let logURL: URL

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    init() throws {
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("backend-\(UUID().uuidString).jsonl")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Backend.fixtures.appendingPathComponent("backend.py").path, "--port", "0", "--log", logURL.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // First line: "PORT <n>".
        var line = [UInt8]()
        let handle = out.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty || byte[0] == 10 { break }
            line.append(byte[0])
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw TestClientError.malformed("backend said: \(text)")
        }
        self.port = port
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: logURL)
    }

    /// Every logged event, in order.
    func events() -> [[String: Any]] {
        guard let data = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return data.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    func requests() -> [[String: Any]] { events().filter { $0["event"] as? String == "request" } }
    func connections() -> [[String: Any]] { events().filter { $0["event"] as? String == "connect" } }

    /// Header values of `name` in a logged request.
    static func headerValues(_ request: [String: Any], _ name: String) -> [String] {
        let headers = request["headers"] as? [[String]] ?? []
        return headers.filter { $0.count == 2 && $0[0].lowercased() == name.lowercased() }.map { $0[1] }
    }
}
