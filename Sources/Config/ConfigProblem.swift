/// One thing wrong with a configuration file, reported as a single line.
///
/// Problems never contain secret values: messages name keys, paths and
/// environment variable names, never token text.
public struct ConfigProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file the problem was found in (`"<string>"` when parsed from text).
    public var file: String
    /// Where in the document the problem is, e.g. `routes[1].credential`,
    /// `credentials.api.tokenFile`, `listen`; `(root)` for the document as a
    /// whole and `line L, column C` for YAML syntax errors.
    public var keyPath: String
    /// What is wrong, in plain words.
    public var message: String
    /// The 1-based line the problem was found on, when known. Used to report
    /// problems in file order; not part of `description`.
    public var line: Int?

    /// Creates a problem.
    public init(file: String, keyPath: String, message: String, line: Int? = nil) {
        self.file = file
        self.keyPath = keyPath
        self.message = message
        self.line = line
    }

    /// `"<file>: <key path>: <message>"`.
    public var description: String {
        "\(file): \(keyPath): \(message)"
    }
}
