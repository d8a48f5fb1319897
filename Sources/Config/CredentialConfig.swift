/// One named entry under `credentials:`.
public struct CredentialConfig: Sendable, Equatable {
    /// The key under `credentials:`, referenced by `routes[].credential`.
    public var name: String
    /// What kind of credential it is and its settings.
    public var kind: CredentialKind
    /// The placeholder the app may send in place of the token (`placeholder`, `placeholderFile`).
    public var placeholder: PlaceholderSetting?
    /// What every route together may do with it (`limits:`), if limited.
    public var limits: LimitsConfig?

    /// Creates a credential.
    public init(name: String, kind: CredentialKind, placeholder: PlaceholderSetting? = nil, limits: LimitsConfig? = nil) {
        self.limits = limits
        self.name = name
        self.kind = kind
        self.placeholder = placeholder
    }
}
