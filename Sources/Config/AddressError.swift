/// Why a listen address or upstream URL could not be parsed.
public struct AddressError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in plain words.
    public var message: String

    /// Creates an error with a message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
