import Foundation

/// The OAuth test token server (Tests/TokenManagerTests/Fixtures/token_server.py) on 127.0.0.1:
/// behaviour switched at runtime through a control file, every request logged with its time.
final class TokenServer {
    let process = Process()
    let port: Int
    let directory: URL
    var logURL: URL { directory.appendingPathComponent("requests.jsonl") }
    var controlURL: URL { directory.appendingPathComponent("control.json") }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("TokenManagerTests/Fixtures/token_server.py")
    }

    init(control settings: [String: Any] = [:], tlsCert: String? = nil, tlsKey: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("requests.jsonl").path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let log = directory.appendingPathComponent("requests.jsonl").path
        let control = directory.appendingPathComponent("control.json").path
        var arguments = ["python3", TokenServer.script.path, "--log", log, "--control", control]
        if let tlsCert, let tlsKey { arguments += ["--tls-cert", tlsCert, "--tls-key", tlsKey] }
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try TokenServer.write(settings, in: directory)
        try process.run()
        var line = [UInt8]()
        while true {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte[0] == 10 { break }
            line.append(byte[0])
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            throw TestClientError.malformed("token server said: \(text)")
        }
        self.port = port
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Replaces the behaviour atomically (write, then rename).
    func setControl(_ control: [String: Any]) throws {
        try TokenServer.write(control, in: directory)
    }

    private static func write(_ control: [String: Any], in directory: URL) throws {
        let temporary = directory.appendingPathComponent("control.tmp")
        try JSONSerialization.data(withJSONObject: control).write(to: temporary)
        guard rename(temporary.path, directory.appendingPathComponent("control.json").path) == 0 else {
            throw TestClientError.malformed("rename")
        }
    }

    /// Every request the server received, in order.
    func requests() -> [[String: Any]] {
        guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}
