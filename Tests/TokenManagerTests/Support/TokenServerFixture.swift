import Foundation
import XCTest

/// Runs Fixtures/token_server.py on a loopback port for one test.
final class TokenServerFixture {
    let port: Int
    private let process: Process
    private let directory: URL
    private let logURL: URL
    private let controlURL: URL

    struct RecordedRequest {
        let method: String
        let path: String
        let headers: [(String, String)]
        let body: String

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    enum FixtureError: Error { case didNotStart }

    init(control: [String: Any] = [:]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("token-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        logURL = directory.appendingPathComponent("requests.jsonl")
        controlURL = directory.appendingPathComponent("control.json")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/token_server.py")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "--log", logURL.path, "--control", controlURL.path]
        let output = Pipe()
        process.standardOutput = output
        try TokenServerFixture.write(control, to: controlURL, in: directory)
        try process.run()

        let found = Locked<Int?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let handle = output.fileHandleForReading
        Thread.detachNewThread {
            var text = ""
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }) {
                    found.update { $0 = Int(line.dropFirst(5)) }
                    break
                }
            }
            ready.signal()
        }
        guard ready.wait(timeout: .now() + 10) == .success, let port = found.value else {
            process.terminate()
            throw FixtureError.didNotStart
        }
        self.port = port
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Replaces the server's behaviour (atomically: write then rename).
    func setControl(_ control: [String: Any]) throws {
        try TokenServerFixture.write(control, to: controlURL, in: directory)
    }

    private static func write(_ control: [String: Any], to controlURL: URL, in directory: URL) throws {
        let data = try JSONSerialization.data(withJSONObject: control)
        let temporary = directory.appendingPathComponent("control.tmp")
        try data.write(to: temporary)
        guard rename(temporary.path, controlURL.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    var requests: [RecordedRequest] {
        guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let headers = (object["headers"] as? [[String]] ?? []).map { ($0[0], $0[1]) }
            return RecordedRequest(method: object["method"] as? String ?? "", path: object["path"] as? String ?? "",
                                   headers: headers, body: object["body"] as? String ?? "")
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
