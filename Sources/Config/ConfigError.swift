/// Everything wrong with a configuration, collected in one pass.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// All problems found, in file order where the position is known.
    public var problems: [ConfigProblem]

    /// Creates an error from one or more problems.
    public init(problems: [ConfigProblem]) {
        self.problems = problems
    }

    /// One line per problem (`ConfigProblem.description`), joined by `"\n"`.
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
