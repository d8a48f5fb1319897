import Foundation
import Synchronization

/// A python3 fixture script run as a child process for one test, with a temporary directory of
/// its own. The script prints `PORT <n>` once it listens on 127.0.0.1; the wait is bounded.
///
/// Every launcher of a test peer (token servers, backends, misbehaving peers) is built on this.
public final class FixtureProcess: @unchecked Sendable {
    /// The child process.
    public let process = Process()
    /// The port it announced.
    public let port: Int
    /// A temporary directory for its logs and control files, removed on deinit.
    public let directory: URL

    /// Why a fixture did not start.
    public struct StartError: Error, CustomStringConvertible {
        /// What happened, naming the script.
        public let description: String
    }

    /// Runs `python3 <script> <arguments>` (`python`: another interpreter, such as
    /// ``PeersPython/path``) and reads its `PORT <n>` line (at most 10 s).
    /// `{dir}` in an argument is replaced by ``directory``; `prepare` runs before the process
    /// starts (to write its first control file, say).
    public convenience init(script: URL, arguments: [String] = [], quiet: Bool = true, python: String = "python3",
                            prepare: (URL) throws -> Void = { _ in }) throws {
        try self.init(command: [python, script.path], arguments: arguments, quiet: quiet, prepare: prepare)
    }

    /// Runs `command` (its first word looked up on `PATH`, or a path) followed by `arguments`,
    /// and reads its `PORT <n>` line (at most 10 s): a peer that is a program of its own, such as
    /// ``GRPCGoPeer/path``. `{dir}` and `prepare` as for a script.
    public init(command: [String], arguments: [String] = [], quiet: Bool = true,
                prepare: (URL) throws -> Void = { _ in }) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID().uuidString)")
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        FixtureDirectories.created(directory.path)
        try prepare(directory)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
            + arguments.map { $0.replacingOccurrences(of: "{dir}", with: directory.path) }
        let out = Pipe()
        process.standardOutput = out
        if quiet { process.standardError = FileHandle.nullDevice }
        try process.run()
        let line = FixtureProcess.firstLine(of: out.fileHandleForReading, within: 10)
        guard let line, line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
            throw StartError(description: "\(command.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: " ")) did not announce its port: \(line ?? "(nothing within 10 s)")")
        }
        self.port = port
    }

    /// Runs `<python> Tests/<script> <arguments>`: `script` is a path relative to ``testsDirectory``,
    /// such as `ProxyTests/Fixtures/backend.py` (otherwise as the URL initializer).
    public convenience init(script: String, arguments: [String] = [], quiet: Bool = true, python: String = "python3",
                            prepare: (URL) throws -> Void = { _ in }) throws {
        try self.init(script: FixtureProcess.testsDirectory.appendingPathComponent(script), arguments: arguments,
                      quiet: quiet, python: python, prepare: prepare)
    }

    /// The package's `Tests` directory, where every test target's `Fixtures` live.
    public static var testsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
        FixtureDirectories.removed(directory.path)
    }

    /// Terminates the process and waits for it.
    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }

    /// A file in ``directory``.
    public func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// The JSON objects of a JSON-lines file in ``directory``, in order (none if it is missing).
    public func jsonLines(_ name: String) -> [[String: Any]] {
        guard let text = try? String(contentsOf: file(name), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Replaces `name` in `directory` with `object` as JSON, atomically (write, then rename),
    /// so a fixture re-reading it never sees half a file.
    public static func writeJSON(_ object: Any, to name: String, in directory: URL) throws {
        let temporary = directory.appendingPathComponent(name + ".tmp")
        try JSONSerialization.data(withJSONObject: object).write(to: temporary)
        guard rename(temporary.path, directory.appendingPathComponent(name).path) == 0 else {
            throw StartError(description: "cannot rename \(temporary.path): errno \(errno)")
        }
    }

    /// Replaces `name` in this fixture's directory with `object` as JSON, atomically.
    public func writeJSON(_ object: Any, to name: String) throws {
        try FixtureProcess.writeJSON(object, to: name, in: directory)
    }

    /// The first line `handle` yields, read on another thread so a silent child cannot hang the test.
    private static func firstLine(of handle: FileHandle, within seconds: Double) -> String? {
        let box = LineBox()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var line = [UInt8]()
            while true {
                let byte = handle.readData(ofLength: 1)
                if byte.isEmpty || byte[0] == 10 { break }
                line.append(byte[0])
            }
            box.set(String(decoding: line, as: UTF8.self))
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return box.get()
    }
}

/// A string handed from a reader thread to the test thread.
private final class LineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = ""
    func set(_ text: String) { lock.lock(); value = text; lock.unlock() }
    func get() -> String { lock.lock(); defer { lock.unlock() }; return value }
}

/// The fixtures' directories not yet removed. XCTest keeps every test case object until the run
/// ends and the process exits without releasing them, so a fixture a test case holds in a
/// property is never deinitialized: its directory is removed when the process exits instead
/// (some hundred of them were left in the temporary directory by each run of the suite).
enum FixtureDirectories {
    private static let live = Mutex<Set<String>>([])
    private static let cleanupRegistered = Mutex(false)

    static func created(_ path: String) {
        live.withLock { _ = $0.insert(path) }
        cleanupRegistered.withLock { registered in
            guard !registered else { return }
            registered = true
            atexit { FixtureDirectories.removeAll() }
        }
    }

    static func removed(_ path: String) {
        live.withLock { _ = $0.remove(path) }
    }

    private static func removeAll() {
        for path in live.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
