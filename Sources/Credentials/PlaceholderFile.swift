import Config
import EventLoop
import Foundation

/// Resolves a credential's placeholder at start: the operator's text as it is, or the text of
/// `placeholderFile`, which is generated (`tsp_` and 40 random letters and digits) and written
/// there when the file does not exist yet, so that it stays the same across restarts and
/// token refreshes and the app can read it.
public enum PlaceholderFile {
    /// The placeholder `setting` stands for; throws naming the credential and the file.
    /// `write: false` (`check`): a missing file is not written, only its directory checked.
    public static func resolve(_ setting: PlaceholderSetting, credential: String, write: Bool = true) throws -> String {
        switch setting {
        case .value(let text):
            return text
        case .file(let path):
            if let data = FileManager.default.contents(atPath: path) {
                let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if let problem = PlaceholderSetting.problem(text) {
                    throw FactoryError("credential '\(credential)': placeholderFile \(path): the placeholder in it \(problem)")
                }
                return text
            }
            let made = generate()
            if write {
                try self.write(made, to: path, credential: credential)
            } else {
                let directory = (path as NSString).deletingLastPathComponent
                guard access(directory.isEmpty ? "." : directory, W_OK) == 0 else {
                    throw FactoryError("credential '\(credential)': placeholderFile \(path): cannot be written (\(String(cString: strerror(errno))))")
                }
            }
            return made
        }
    }

    /// A new placeholder: the prefix and 40 characters from the system's secure generator
    /// (238 bits: never guessed, never the same twice).
    public static func generate() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        let body = (0..<40).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] }
        return PlaceholderSetting.generatedPrefix + String(decoding: body, as: UTF8.self)
    }

    /// Writes `text` and a newline to `path`, mode 0644 (``AtomicFile``): an app never reads
    /// half a placeholder, and may run as another user.
    private static func write(_ text: String, to path: String, credential: String) throws {
        do {
            try AtomicFile.write(Array((text + "\n").utf8), to: path, mode: 0o644)
        } catch {
            throw FactoryError("credential '\(credential)': placeholderFile \(path): \(error)")
        }
    }
}
