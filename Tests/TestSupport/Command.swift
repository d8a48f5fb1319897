import Foundation

/// Runs a real program to completion (curl, openssl, python3, node, the sidecar binary): its
/// exit status and both outputs. The environment is only `PATH` (and `HOME`, `PYENV_ROOT` when
/// set) plus `environment`, so no proxy setting of the machine leaks into a test; with
/// `timeout`, the program runs under `timeout(1)`, so no test can hang on it.
public enum Command {
    /// What a finished program left.
    public struct Outcome: Sendable {
        /// The exit status (124 when `timeout` stopped it).
        public var status: Int32
        /// Standard output, as text.
        public var out: String
        /// Standard error, as text.
        public var err: String
    }

    /// Runs `arguments` (looked up on `PATH`), feeding it `stdin` when given.
    public static func run(_ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil,
                           timeout: Int? = 30) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = (timeout.map { ["timeout", String($0)] } ?? []) + arguments
        let inherited = ProcessInfo.processInfo.environment
        var env = ["PATH": inherited["PATH"] ?? "/usr/bin:/bin"]
        for key in ["HOME", "PYENV_ROOT"] { env[key] = inherited[key] }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = stdin.map { _ in Pipe() }
        if let input { process.standardInput = input }
        try process.run()
        if let input, let stdin {
            // Written on another thread: a large input would otherwise fill the pipe while the
            // program waits for its output to be read.
            let writer = input.fileHandleForWriting
            DispatchQueue.global().async {
                writer.write(stdin)
                try? writer.close()
            }
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, out: String(decoding: outData, as: UTF8.self),
                       err: String(decoding: errData, as: UTF8.self))
    }
}
