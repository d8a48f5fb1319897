import Foundation
import XCTest

/// A python fixture process started for one test; it prints `PORT <n>` first.
final class FixtureServer {
    let process = Process()
    let port: Int
    let directory: URL

    static var testsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Starts `script` (relative to Tests/) with `arguments`; `{dir}` in an argument is the fixture's temp directory.
    init(script: String, arguments: [String] = []) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", FixtureServer.testsDirectory.appendingPathComponent(script).path]
            + arguments.map { $0.replacingOccurrences(of: "{dir}", with: directory.path) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
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
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Lines of a JSON-lines log file in the fixture's directory.
    func log(_ name: String) -> [[String: Any]] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}

extension FixtureServer {
    /// The OAuth test token server (TokenManagerTests/Fixtures/token_server.py), its control file
    /// set to `control` and its requests logged to `requests.jsonl`.
    static func tokenServer(_ control: [String: Any] = [:]) throws -> FixtureServer {
        let server = try FixtureServer(script: "TokenManagerTests/Fixtures/token_server.py",
                                       arguments: ["--log", "{dir}/requests.jsonl", "--control", "{dir}/control.json"])
        try JSONSerialization.data(withJSONObject: control).write(to: server.directory.appendingPathComponent("control.json"))
        return server
    }

    /// The recording test backend (ProxyTests/Fixtures/backend.py), logging to `log` when given.
    static func backend(log: String? = nil) throws -> FixtureServer {
        try FixtureServer(script: "ProxyTests/Fixtures/backend.py",
                          arguments: ["--port", "0"] + (log.map { ["--log", "{dir}/\($0)"] } ?? []))
    }
}

/// The outcome of running the binary.
struct Outcome { var status: Int32; var out: String; var err: String }

extension XCTestCase {
    /// The `token-sidecar` binary built next to this test bundle.
    static var sidecarBinary: URL {
        var directory = Bundle.main.bundleURL
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directory = bundle.bundleURL.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("token-sidecar")
    }

    /// Runs the binary to completion.
    func runSidecar(_ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        let process = Process()
        process.executableURL = Self.sidecarBinary
        process.arguments = arguments
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
    }

    /// Writes a config file that is removed after the test.
    func writeConfig(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString).yaml")
        try text.write(to: url, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }
}
