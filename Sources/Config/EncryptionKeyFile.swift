import Foundation

/// Reads the shared cache's `encryptionKeyFile`: exactly 32 bytes, either raw or base64 text
/// (surrounding whitespace ignored). Messages name the file, never any byte of the key.
public enum EncryptionKeyFile {
    /// The key length AES-256 needs.
    public static let keyLength = 32

    /// The key in `path`; throws a ``ConfigError`` naming the file and `sharedCache.encryptionKeyFile`.
    public static func read(_ path: String) throws -> [UInt8] {
        switch load(path) {
        case .success(let key): return key
        case .failure(let problem):
            throw ConfigError(problems: [ConfigProblem(file: path, keyPath: "sharedCache.encryptionKeyFile", message: problem.message)])
        }
    }

    /// `read` without the error wrapping, for the loader.
    static func load(_ path: String) -> Result<[UInt8], ProblemMessage> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return .failure(ProblemMessage("cannot read \(path): no such file"))
        }
        if isDirectory.boolValue { return .failure(ProblemMessage("\(path) is a directory, not a file")) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(ProblemMessage("cannot read \(path) (permission denied?)"))
        }
        defer { try? handle.close() }
        // A key file is tiny: the cap keeps a mistaken path such as /dev/zero from hanging.
        guard let data = try? handle.read(upToCount: 257) else {
            return .failure(ProblemMessage("cannot read \(path)"))
        }
        return decode([UInt8](data)).map { .success($0) }
            ?? .failure(ProblemMessage("\(path) must hold a 32-byte key, raw or base64 (e.g. openssl rand -base64 32); got \(data.count > 256 ? "more than 256" : String(data.count)) bytes that are neither"))
    }

    /// 32 raw bytes as they are; otherwise base64 text (whitespace trimmed) that decodes to 32 bytes.
    static func decode(_ bytes: [UInt8]) -> [UInt8]? {
        if bytes.count == keyLength { return bytes }
        guard bytes.count < 256, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed), data.count == keyLength else { return nil }
        return [UInt8](data)
    }
}
