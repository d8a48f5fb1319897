/// A credential whose token is fixed for the life of the process (type `static`).
public struct StaticTokenConfig: Sendable, Equatable {
    /// Where the token is read from.
    public var source: SecretSource

    /// Creates a static credential.
    public init(source: SecretSource) {
        self.source = source
    }
}
