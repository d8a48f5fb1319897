import Foundation
import Yams

/// Loads and validates the sidecar's YAML configuration.
public enum ConfigLoader {
    /// Config files larger than this are rejected before parsing.
    static let maxConfigBytes = 4 * 1024 * 1024

    /// Reads and validates the file at `path`. `${VAR}` references and
    /// `tokenEnv` read from `environment`; token files are read (to check
    /// them) relative to the config file's directory. Throws every problem
    /// found, in file order.
    public static func load(path: String, environment: [String: String]) throws(ConfigError) -> SidecarConfig {
        let text: String
        switch FileReader.readText(path, maxBytes: maxConfigBytes) {
        case .success(let contents): text = contents
        case .failure(let error):
            throw ConfigError(problems: [
                ConfigProblem(file: path, keyPath: "(root)", message: "cannot read config file: \(error.message)"),
            ])
        }
        var directory = (path as NSString).deletingLastPathComponent
        if directory.isEmpty { directory = "." }
        return try decode(yaml: text, file: path, environment: environment, baseDirectory: directory)
    }

    /// Validates YAML text. `file` is only used in messages and
    /// `SidecarConfig.file`; relative `tokenFile` paths stay relative to the
    /// working directory.
    public static func parse(yaml: String, file: String = "<string>", environment: [String: String]) throws(ConfigError) -> SidecarConfig {
        try decode(yaml: yaml, file: file, environment: environment, baseDirectory: nil)
    }

    private static func decode(
        yaml: String, file: String, environment: [String: String], baseDirectory: String?
    ) throws(ConfigError) -> SidecarConfig {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigError(problems: [yamlProblem(error, file: file)])
        }
        guard let root, !ConfigDecoder.isNull(root) else {
            throw ConfigError(problems: [
                ConfigProblem(file: file, keyPath: "(root)", message: "the file is empty; expected settings such as listen and routes"),
            ])
        }
        var decoder = ConfigDecoder(file: file, environment: environment, baseDirectory: baseDirectory)
        let config = decoder.decode(EnvironmentOverrides.apply(to: root, environment: environment))
        guard decoder.problems.isEmpty else {
            // Stable sort: problems without a line keep their relative order at the top.
            let sorted = decoder.problems.enumerated()
                .sorted { ($0.element.line ?? 0, $0.offset) < ($1.element.line ?? 0, $1.offset) }
                .map(\.element)
            throw ConfigError(problems: sorted)
        }
        return config
    }

    /// Turns a Yams error into one problem. Deliberately built from the
    /// error's parts rather than its description, which quotes the offending
    /// source line (and that line could hold a token).
    static func yamlProblem(_ error: any Error, file: String) -> ConfigProblem {
        func position(_ mark: Mark) -> String { position(mark.line, mark.column) }
        func position(_ line: Int, _ column: Int) -> String { "line \(line), column \(column)" }
        func context(_ context: YamlError.Context?) -> String {
            context.map { " (\($0.text) at \(position($0.mark)))" } ?? ""
        }
        guard let error = error as? YamlError else {
            return ConfigProblem(file: file, keyPath: "(root)", message: "invalid YAML")
        }
        switch error {
        case let .scanner(ctx, problem, mark, _), let .parser(ctx, problem, mark, _), let .composer(ctx, problem, mark, _):
            // An unquoted `*.example.com` is YAML alias syntax; say so, since
            // libyaml's wording gives no clue.
            let isAlias = problem.contains("alias") || (ctx?.text.contains("alias") ?? false)
            let hint = isAlias ? "; a value starting with '*' must be quoted, e.g. host: \"*.example.com\"" : ""
            return ConfigProblem(
                file: file, keyPath: position(mark), message: "invalid YAML: \(problem)\(context(ctx))\(hint)", line: mark.line)
        case let .duplicatedKeysInMapping(duplicates, ctx):
            // ctx.text is the whole document here, so it must not be shown.
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            return ConfigProblem(file: file, keyPath: position(ctx.mark), message: "invalid YAML: duplicate key \(keys) (a key may appear only once per mapping)", line: ctx.mark.line)
        case let .reader(problem, offset, _, yaml):
            if let offset, let (line, column) = lineAndColumn(atCharacterOffset: offset, in: yaml) {
                return ConfigProblem(file: file, keyPath: position(line, column), message: "invalid YAML: \(problem)", line: line)
            }
            return ConfigProblem(file: file, keyPath: "(root)", message: "invalid YAML: \(problem)")
        default:
            return ConfigProblem(file: file, keyPath: "(root)", message: "invalid YAML")
        }
    }

    /// 1-based line and column of a character offset (Yams reports reader errors by offset).
    private static func lineAndColumn(atCharacterOffset offset: Int, in text: String) -> (Int, Int)? {
        guard offset >= 0, offset <= text.count else { return nil }
        let prefix = text.prefix(offset)
        let line = prefix.reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
        let column = prefix.count - (prefix.lastIndex(of: "\n").map { prefix.distance(from: prefix.startIndex, to: $0) + 1 } ?? 0) + 1
        return (line, column)
    }
}
