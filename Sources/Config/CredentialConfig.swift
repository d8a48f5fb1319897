/// One named entry under `credentials:`.
public struct CredentialConfig: Sendable, Equatable {
    /// The key under `credentials:`, referenced by `routes[].credential`.
    public var name: String
    /// What kind of credential it is and its settings.
    public var kind: CredentialKind
    /// The placeholder the app may send in place of the token (`placeholder`, `placeholderFile`).
    public var placeholder: PlaceholderSetting?

    /// Creates a credential.
    public init(name: String, kind: CredentialKind, placeholder: PlaceholderSetting? = nil) {
        self.name = name
        self.kind = kind
        self.placeholder = placeholder
    }
}
