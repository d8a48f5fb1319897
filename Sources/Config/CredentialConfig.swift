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

    /// The client id it authenticates with, when the file says one (mca, oauth2).
    public var clientId: String? {
        switch kind {
        case .mca(let mca): return mca.clientId
        case .oauth2(let oauth): return oauth.clientId
        case .staticToken, .googleServiceAccount, .aws: return nil
        }
    }

    /// Whether its token never expires: a static token, AWS keys from files.
    var neverExpires: Bool {
        switch kind {
        case .staticToken: return true
        case .aws(let aws): if case .files = aws.source { return true } else { return false }
        case .mca, .oauth2, .googleServiceAccount: return false
        }
    }

    /// Whether it is an `mca` credential.
    var isMCA: Bool {
        if case .mca = kind { return true }
        return false
    }
}
