/// How much the sidecar logs. Mirrors the swift-log levels by name so the
/// executable can map it with `Logger.Level(rawValue:)`.
public enum LogLevel: String, Sendable, Hashable, CaseIterable {
    /// Everything, including per-byte detail.
    case trace
    /// Diagnostic detail.
    case debug
    /// Normal operation (the default).
    case info
    /// Noteworthy but normal events.
    case notice
    /// Something unexpected that was handled.
    case warning
    /// A request or operation failed.
    case error
    /// The sidecar cannot continue.
    case critical
}
