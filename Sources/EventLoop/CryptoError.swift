/// Why a key or certificate could not be loaded or used. The message says what and why, and
/// never contains key material.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for people.
    public let description: String

    /// Creates an error with a message.
    public init(_ description: String) { self.description = description }
}
