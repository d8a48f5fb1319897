import Foundation

/// A python3 fixture script (under Fixtures/) as a child process that prints `PORT <n>` once listening.
final class FixtureProcess {
    let process = Process()
    let port: Int

    /// Runs `python3 Fixtures/<script> <arguments>` and reads the `PORT <n>` line (bounded wait).
    init(script: String, arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Backend.fixtures.appendingPathComponent(script).path] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = out.fileHandleForReading
        let box = LineBox()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var line = [UInt8]()
            while true {
                let byte = handle.readData(ofLength: 1)
                if byte.isEmpty || byte[0] == 10 { break }
                line.append(byte[0])
            }
            box.set(String(decoding: line, as: UTF8.self))
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            process.terminate()
            process.waitUntilExit()
            throw TestClientError.malformed("\(script) did not print its port within 10 s")
        }
        let text = box.get()
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            process.terminate()
            process.waitUntilExit()
            throw TestClientError.malformed("\(script) said: \(text)")
        }
        self.port = port
    }

    deinit {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }
}

/// A string handed from a reader thread to the test thread.
private final class LineBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = ""
    func set(_ text: String) { lock.lock(); value = text; lock.unlock() }
    func get() -> String { lock.lock(); defer { lock.unlock() }; return value }
}
