import Foundation

/// The interpreter of one of the project's test virtual environments (made by `make`: a
/// folder `.build-NAME` at the repository's root): the environment variable naming it when set,
/// else that environment's `bin/python3`, else `python3` on the PATH (whose packages may lack
/// what the environment holds).
enum VirtualEnvPython {
    /// The interpreter of `folder` (such as `.build-peers`), or of `$variable`.
    static func path(folder: String, variable: String) -> String {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidate = ProcessInfo.processInfo.environment[variable] ?? repo.appendingPathComponent("\(folder)/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : "python3"
    }
}
