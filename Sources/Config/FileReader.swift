import Foundation

/// Reads small text files (the config file, token files) with a size cap,
/// so a mistaken path such as `/dev/zero` fails instead of hanging.
enum FileReader {
    /// Reads `path` as UTF-8, failing with a message (never file contents)
    /// when it is missing, a directory, unreadable, too large or not UTF-8.
    static func readText(_ path: String, maxBytes: Int) -> Result<String, ProblemMessage> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return .failure(ProblemMessage("no such file"))
        }
        if isDirectory.boolValue { return .failure(ProblemMessage("is a directory, not a file")) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(ProblemMessage("cannot open for reading (permission denied?)"))
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maxBytes + 1) ?? Data()
        } catch {
            return .failure(ProblemMessage("cannot read: \(error.localizedDescription)"))
        }
        if data.count > maxBytes {
            return .failure(ProblemMessage("is larger than \(maxBytes / 1024) KiB"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            return .failure(ProblemMessage("is not valid UTF-8 text"))
        }
        return .success(text)
    }
}
