import Foundation

/// Where a token comes from. The value itself is only ever held for inline
/// tokens, and `description` never shows it.
public enum SecretSource: Sendable, Equatable, CustomStringConvertible {
    /// The token written in the config (after `${VAR}` expansion).
    case inline(String)
    /// A file whose contents are the token (path as resolved at load).
    case file(String)
    /// An environment variable holding the token.
    case env(String)

    /// Token files larger than this are rejected: a token is never this big,
    /// and the cap protects against pointing at a device or a huge file.
    static let maxTokenFileBytes = 64 * 1024

    /// `"inline"`, `"file <path>"` or `"env <VAR>"` — never the secret.
    public var description: String {
        switch self {
        case .inline: return "inline"
        case .file(let path): return "file \(path)"
        case .env(let name): return "env \(name)"
        }
    }

    /// Reads the secret now: inline as is, a file's contents or the
    /// variable's value from `environment`, with surrounding whitespace and
    /// newlines trimmed. Throws a `ConfigError` (naming the path or variable,
    /// never the value) when the source is missing or unreadable, the token
    /// is empty, or it contains control characters (which would let it
    /// break out of the `Authorization` header line).
    public func read(environment: [String: String]) throws -> String {
        switch readResult(environment: environment) {
        case .success(let token):
            return token
        case .failure(let error):
            let (file, key): (String, String)
            switch self {
            case .inline: (file, key) = ("<inline>", "token")
            case .file(let path): (file, key) = (path, "tokenFile")
            case .env: (file, key) = ("<environment>", "tokenEnv")
            }
            throw ConfigError(problems: [ConfigProblem(file: file, keyPath: key, message: error.message)])
        }
    }

    /// `read` without the `ConfigError` wrapping, so the loader can report
    /// the message under the right file and key path. `noun` names the
    /// secret in messages ("token", "secret").
    func readResult(environment: [String: String], noun: String = "token") -> Result<String, ProblemMessage> {
        let raw: String
        switch self {
        case .inline(let value):
            raw = value
        case .file(let path):
            switch FileReader.readText(path, maxBytes: Self.maxTokenFileBytes) {
            case .success(let text): raw = text
            case .failure(let error): return .failure(ProblemMessage("cannot read \(noun) file \(path): \(error.message)"))
            }
        case .env(let name):
            guard let value = environment[name] else {
                return .failure(ProblemMessage("environment variable \(name) is not set"))
            }
            raw = value
        }
        return Self.validate(raw, source: self, noun: noun)
    }

    /// Trims the token and rejects empty tokens and control characters.
    static func validate(_ raw: String, source: SecretSource, noun: String = "token") -> Result<String, ProblemMessage> {
        let what: String
        switch source {
        case .inline: what = noun
        case .file(let path): what = "\(noun) file \(path)"
        case .env(let name): what = "environment variable \(name)"
        }
        return validate(raw, what: what, noun: noun)
    }

    /// `validate` with the subject of messages given as `what` ("secret in VCAP_SERVICES").
    static func validate(_ raw: String, what: String, noun: String) -> Result<String, ProblemMessage> {
        let token = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if token.isEmpty {
            return .failure(ProblemMessage("\(what) is empty"))
        }
        if token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return .failure(ProblemMessage("\(what) contains control characters (such as a line break inside the \(noun))"))
        }
        return .success(token)
    }
}
