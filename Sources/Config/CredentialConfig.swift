/// One named entry under `credentials:`.
public struct CredentialConfig: Sendable, Equatable {
    /// The key under `credentials:`, referenced by `routes[].credential`.
    public var name: String
    /// What kind of credential it is and its settings.
    public var kind: CredentialKind

    /// Creates a credential.
    public init(name: String, kind: CredentialKind) {
        self.name = name
        self.kind = kind
    }
}
