import Foundation
import Yams

extension ConfigDecoder {
    /// The three keys that name a secret's source, and what it is called in messages.
    struct SecretKeys {
        let inline: String
        let file: String
        let env: String
        let noun: String

        var all: [String] { [inline, file, env] }

        static let token = SecretKeys(inline: "token", file: "tokenFile", env: "tokenEnv", noun: "token")
        static let secret = SecretKeys(inline: "secret", file: "secretFile", env: "secretEnv", noun: "secret")
    }

    /// Reads the secret given under `key` (one of `keys`) now, so a missing
    /// file or variable fails at load; returns its source (inline values
    /// trimmed) or nil after reporting a problem that never shows the value.
    mutating func readSecret(_ node: Node, key: String, path: String, keys: SecretKeys) -> SecretSource? {
        let keyPath = Self.join(path, key)
        guard case .value(let text) = string(node, path: keyPath, nullIsAbsent: false) else { return nil }
        let source: SecretSource
        switch key {
        case keys.inline:
            source = .inline(text)
        case keys.file:
            if text.isEmpty {
                report(keyPath, "is empty; expected the path of a file holding the \(keys.noun)", at: node)
                return nil
            }
            source = .file(resolve(path: text))
        default:
            if text.isEmpty {
                report(keyPath, "is empty; expected the name of an environment variable holding the \(keys.noun)", at: node)
                return nil
            }
            source = .env(text)
        }
        switch source.readResult(environment: environment, noun: keys.noun) {
        case .success(let value):
            // Inline secrets are stored trimmed, exactly as `read` returns them.
            if case .inline = source { return .inline(value) }
            return source
        case .failure(let error):
            report(keyPath, error.message, at: node)
            return nil
        }
    }

    /// A required-looking text value such as a client id: non-empty, no
    /// control characters. The value is never shown in messages.
    mutating func plainText(_ node: Node?, path: String) -> Field<String> {
        switch string(node, path: path, nullIsAbsent: true) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            if let problem = Self.plainTextProblem(text) {
                report(path, problem, at: node)
                return .invalid
            }
            return .value(text)
        }
    }

    /// Why `text` can't be a client id, tenant id or similar; nil when fine.
    static func plainTextProblem(_ text: String) -> String? {
        if text.isEmpty { return "is empty" }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "contains control characters"
        }
        return nil
    }

    /// A token server URL (`serverUrl`, `tokenUrl`). The text is not
    /// repeated in messages, as a mistaken URL may carry credentials.
    mutating func endpoint(_ node: Node?, path: String, queryHint: String = "") -> Field<EndpointURL> {
        switch string(node, path: path) {
        case .absent: return .absent
        case .invalid: return .invalid
        case .value(let text):
            switch EndpointURL.parse(text, allowQuery: false) {
            case .success(let url): return .value(url)
            case .failure(let error):
                let hint = error.message == "URL must not have a query" ? queryHint : ""
                report(path, "invalid URL: \(error.message)\(hint)", at: node)
                return .invalid
            }
        }
    }

    /// `refreshAt`, `defaultLifetime`, `tokenWait` and `unauthorizedRefetchInterval`; nil when any is invalid.
    mutating func decodeFetchSettings(_ fields: [String: Node], path: String) -> TokenFetchSettings? {
        var settings = TokenFetchSettings.default
        var valid = true
        let refreshPath = Self.join(path, "refreshAt")
        switch string(fields["refreshAt"], path: refreshPath) {
        case .absent: break
        case .invalid: valid = false
        case .value(let text):
            switch Self.parsePercentage(text) {
            case .success(let fraction): settings.refreshAt = fraction
            case .failure(let error):
                report(refreshPath, error.message, at: fields["refreshAt"])
                valid = false
            }
        }
        let lifetimePath = Self.join(path, "defaultLifetime")
        switch duration(fields["defaultLifetime"], path: lifetimePath) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value):
            if value > .zero {
                settings.defaultLifetime = value
            } else {
                report(lifetimePath, "must be greater than 0", at: fields["defaultLifetime"])
                valid = false
            }
        }
        switch duration(fields["tokenWait"], path: Self.join(path, "tokenWait")) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value): settings.tokenWait = value
        }
        let refetchPath = Self.join(path, "unauthorizedRefetchInterval")
        switch duration(fields["unauthorizedRefetchInterval"], path: refetchPath) {
        case .absent: break
        case .invalid: valid = false
        case .value(let value):
            if value > .zero {
                settings.unauthorizedRefetchInterval = value
            } else {
                report(refetchPath, "must be greater than 0", at: fields["unauthorizedRefetchInterval"])
                valid = false
            }
        }
        return valid ? settings : nil
    }

    /// `80%` → 0.8. Whole or decimal percentages from 1% to 99%.
    static func parsePercentage(_ text: String) -> Result<Double, ProblemMessage> {
        let usage = "expected a percentage of the token lifetime from 1% to 99%, e.g. 80%"
        guard text.hasSuffix("%") else { return .failure(ProblemMessage("\(usage) (got '\(text)')")) }
        let number = text.dropLast()
        let pieces = number.split(separator: ".", omittingEmptySubsequences: false)
        guard !number.isEmpty, pieces.count <= 2, pieces.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let percent = Double(number)
        else {
            return .failure(ProblemMessage("\(usage) (got '\(text)')"))
        }
        guard percent >= 1, percent <= 99 else {
            return .failure(ProblemMessage("must be between 1% and 99% (got \(text))"))
        }
        return .success(percent / 100)
    }

    /// Relative file paths are taken relative to the config file's
    /// directory (when loaded from a file), like most tools that reference
    /// files from their config.
    func resolve(path: String) -> String {
        guard let baseDirectory, !path.hasPrefix("/") else { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: baseDirectory, isDirectory: true))
            .standardizedFileURL.path
    }
}
