/// The credentials of one configuration, by name. Immutable once built, shared by every worker.
public struct CredentialSet: Sendable {
    private let byName: [String: any Credential]

    /// Collects credentials; names must be unique (the config loader guarantees it).
    public init(_ credentials: [any Credential]) {
        var byName: [String: any Credential] = [:]
        for credential in credentials { byName[credential.name] = credential }
        self.byName = byName
    }

    /// The credential called `name`.
    public subscript(name: String) -> (any Credential)? { byName[name] }

    /// Every credential, sorted by name.
    public var all: [any Credential] { byName.keys.sorted().compactMap { byName[$0] } }
}
