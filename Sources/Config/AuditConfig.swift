/// `audit:`: where the sidecar writes one JSON line per request that used a credential and per
/// refusal of a route's policy (issue 68), apart from the access log.
public struct AuditConfig: Sendable, Equatable {
    /// The file records are appended to (created 0600 when missing), or `-` for stdout.
    public var file: String

    /// Records to `file` (`-`: stdout).
    public init(file: String) {
        self.file = file
    }

    /// Whether records go to stdout.
    public var toStandardOutput: Bool { file == "-" }
}
