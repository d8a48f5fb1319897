import Foundation
import Glibc
import TestSupport
import XCTest

/// A `token-sidecar run` process, optionally under a descriptor limit (`prlimit --nofile`), whose
/// stdout and stderr both go to one file, so the test can measure everything it writes without a
/// pipe that fills up and stalls it.
final class CapturedSidecar {
    let process = Process()
    let outputURL: URL
    /// The proxy's port (from the "listening" line).
    private(set) var port = 0
    /// The admin port (from the "admin listening" line).
    private(set) var adminPort = 0

    /// Starts the binary with `run --config configPath`; with `descriptorLimit`, under
    /// `prlimit --nofile=N:N` (which sets the limit on itself, then execs the binary: same pid);
    /// `environment`: further variables of the child.
    init(configPath: String, descriptorLimit: Int? = nil, environment: [String: String] = [:]) throws {
        outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-out-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let output = try FileHandle(forWritingTo: outputURL)
        let binary = XCTestCaseBinary.url.path
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(descriptorLimit):\(descriptorLimit)", binary, "run", "--config", configPath]
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["run", "--config", configPath]
        }
        process.environment = childEnvironment(environment.merging(["PATH": "/usr/bin:/bin"]) { own, _ in own })
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.close()
        let deadline = Date().addingTimeInterval(15)
        while (port == 0 || adminPort == 0) && Date() < deadline && process.isRunning {
            for object in jsonLines() {
                guard let address = object["address"] as? String, let colon = address.lastIndex(of: ":"),
                      let value = Int(address[address.index(after: colon)...]) else { continue }
                if object["msg"] as? String == "listening" { port = value }
                if object["msg"] as? String == "admin listening" { adminPort = value }
            }
            if port == 0 || adminPort == 0 { Thread.sleep(forTimeInterval: 0.05) }
        }
        guard port != 0, adminPort != 0 else {
            stop()
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no listening lines: \(text().prefix(2000))"])
        }
    }

    /// The credential endpoints' port (from the "credential endpoints listening" line, logged
    /// just after the admin's), waiting up to 5 s; 0 when there is none.
    func credentialEndpointsPort() -> Int {
        let deadline = Date().addingTimeInterval(5)
        repeat {
            for object in jsonLines() where object["msg"] as? String == "credential endpoints listening" {
                if let address = object["address"] as? String, let colon = address.lastIndex(of: ":"),
                   let value = Int(address[address.index(after: colon)...]) { return value }
            }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return 0
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: outputURL)
    }

    /// Stops the process (SIGKILL: the tests measure it, they do not test its shutdown).
    func stop() {
        killAndReap(process)
    }

    /// Stops the process as a supervisor does (SIGTERM: it drains), then SIGKILL after `grace`
    /// seconds if it is still running. Returns whether it exited by itself.
    @discardableResult
    func terminate(grace: Double = 20) -> Bool {
        guard process.isRunning else { return true }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let exited = !process.isRunning
        stop()
        return exited
    }

    /// Bytes written so far to stdout and stderr together.
    var outputSize: Int {
        ((try? FileManager.default.attributesOfItem(atPath: outputURL.path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Everything written so far (only read when small).
    func text() -> String {
        (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
    }

    /// Lines written so far that parse as JSON objects.
    func jsonLines() -> [[String: Any]] {
        text().split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Lines written so far that are not JSON objects.
    func nonJSONLines() -> [String] {
        text().split(separator: "\n").map(String.init).filter {
            !((try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any])
        }
    }

    /// User + system CPU time the process has used so far, in seconds (`/proc/<pid>/stat`).
    func cpuSeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name start at field 3 (state); utime and stime are 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
