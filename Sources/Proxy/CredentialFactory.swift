import Config
import TokenManager

/// Builds the runtime credentials a configuration describes.
public enum CredentialFactory {
    /// One ``Credential`` per configured credential. Throws when a secret cannot be read
    /// (the error names the credential and source, never the secret).
    public static func make(from config: SidecarConfig, environment: [String: String]) throws -> CredentialSet {
        var credentials: [any Credential] = []
        for credential in config.credentials {
            switch credential.kind {
            case .staticToken(let settings):
                let token = try settings.source.read(environment: environment)
                credentials.append(StaticCredential(name: credential.name, token: token))
            case .mca, .oauth2:
                throw FactoryError("credential '\(credential.name)': type \(credential.kind.typeName) is wired in by the token manager")
            }
        }
        return CredentialSet(credentials)
    }
}

/// A credential that cannot be built.
struct FactoryError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
