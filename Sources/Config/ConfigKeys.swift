/// The keys each level of the config accepts, used for unknown-key checks
/// and "did you mean" suggestions. Keep in sync with `ConfigDecoder`.
enum ConfigKeys {
    static let root = ["listen", "workers", "logLevel", "otherHosts", "credentials", "routes"]
    static let credentialCommon = ["type"]
    static let staticToken = ["token", "tokenFile", "tokenEnv"]
    static let route = ["host", "upstream", "preserveHost", "credential"]
    /// Credential types understood by this version.
    static let credentialTypes = ["static"]
    /// Allowed range for `workers`.
    static let workers = 1...64
}
