/// The kind of a credential, selected by its `type:` key.
public enum CredentialKind: Sendable, Equatable {
    /// `type: static` — a fixed bearer token.
    case staticToken(StaticTokenConfig)

    /// The `type:` value that selects this kind.
    public var typeName: String {
        switch self {
        case .staticToken: return "static"
        }
    }
}
