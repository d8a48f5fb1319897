import JSON

/// The configuration the sidecar runs with and how its reloads went: the status page's
/// "Configuration" section, `POST /reload`'s answer and the `token_sidecar_config_*` metrics.
public struct ConfigurationReport: Sendable, Equatable {
    /// The configuration file.
    public var file: String
    /// The running configuration's version: the first 12 hex digits of its file's SHA-256.
    public var version: String
    /// When it was loaded (at start or by the last successful reload).
    public var loadedAt: WallClockTime
    /// Why the last reload was refused (`FILE: key: problem`), nil when it applied.
    public var lastError: String?
    /// When a reload was last refused, if ever.
    public var lastErrorAt: WallClockTime?
    /// Reloads applied since start.
    public var reloads: Int
    /// Reloads refused since start.
    public var failedReloads: Int

    /// Creates a report.
    public init(file: String, version: String, loadedAt: WallClockTime, lastError: String? = nil, lastErrorAt: WallClockTime? = nil,
                reloads: Int = 0, failedReloads: Int = 0) {
        self.file = file
        self.version = version
        self.loadedAt = loadedAt
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.reloads = reloads
        self.failedReloads = failedReloads
    }

    /// As JSON (the status document's `configuration`, `POST /reload`'s body).
    public var json: JSONValue {
        .object([
            ("file", .string(file)),
            ("version", .string(version)),
            ("loadedAt", .string(loadedAt.iso8601)),
            ("lastError", .string(lastError)),
            ("lastErrorAt", .string(lastErrorAt?.iso8601)),
            ("reloads", .int(reloads)),
            ("failedReloads", .int(failedReloads)),
        ])
    }
}
