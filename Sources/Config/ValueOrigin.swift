/// Where an effective credential setting came from, so `token-sidecar check`
/// can say why a value is what it is.
public enum ValueOrigin: Sendable, Equatable, CustomStringConvertible {
    /// Written in the config file (possibly through `${VAR}` expansion).
    case file
    /// Read from this environment variable (`tokenEnv` / `secretEnv`).
    case environment(String)
    /// Discovered from a service binding in `VCAP_SERVICES` (or `USER_PROVIDED_VCAP_SERVICES`).
    case vcapServices(VCAPBinding)
    /// Discovered from the Cloud Foundry `VCAP_APPLICATION` variable.
    case vcapApplication
    /// Not set anywhere; the built-in default applies.
    case defaultValue
    /// The subject CN of the configured client certificate (an mca `clientId` with `auth: certificate`).
    case certificateSubject

    /// `"the config file"`, `"environment variable NAME"`, `"VCAP_SERVICES binding "name" (label)"`,
    /// `"VCAP_APPLICATION"` or `"default"`.
    public var description: String {
        switch self {
        case .file: return "the config file"
        case .environment(let name): return "environment variable \(name)"
        case .vcapServices(let binding): return binding.description
        case .vcapApplication: return "VCAP_APPLICATION"
        case .defaultValue: return "default"
        case .certificateSubject: return "the client certificate's subject CN"
        }
    }
}
