/// Load-time checks of the PEM files named by TLS settings. Messages name
/// the path, never the contents (a key file is a secret).
enum PEMFile {
    /// What a file must contain.
    enum Kind {
        /// `caFile`: one or more certificates.
        case caBundle
        /// `clientCert`: a certificate (chain).
        case certificate
        /// `clientKey`: an unencrypted private key.
        case privateKey

        /// How the file is named in messages.
        var noun: String {
            switch self {
            case .caBundle: return "CA file"
            case .certificate: return "client certificate file"
            case .privateKey: return "private key file"
            }
        }
    }

    /// CA bundles are typically a few hundred KiB; anything far larger is a mistake.
    static let maxBytes = 4 * 1024 * 1024

    /// A message when `path` is unreadable or does not hold what `kind` needs; nil when fine.
    static func check(_ path: String, kind: Kind) -> ProblemMessage? {
        let text: String
        switch FileReader.readText(path, maxBytes: maxBytes) {
        case .success(let contents): text = contents
        case .failure(let error): return ProblemMessage("cannot read \(kind.noun) \(path): \(error.message)")
        }
        switch kind {
        case .caBundle, .certificate:
            if !text.contains("-----BEGIN CERTIFICATE-----") {
                return ProblemMessage("\(kind.noun) \(path) contains no PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
        case .privateKey:
            if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                return ProblemMessage("\(kind.noun) \(path) is encrypted; an unencrypted private key is needed")
            }
            if !text.contains("PRIVATE KEY-----") {
                return ProblemMessage("\(kind.noun) \(path) contains no PEM private key (-----BEGIN ... PRIVATE KEY-----)")
            }
        }
        return nil
    }
}
