/// Why a route host pattern could not be parsed.
public struct PatternError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in plain words.
    public var message: String

    /// Creates an error with a message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
