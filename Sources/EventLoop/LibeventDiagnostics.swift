import CLibevent

/// Routes libevent's own diagnostic lines (which it would otherwise print to stderr as
/// `[warn] ...`) to a handler, so every line the process writes can go through one logger.
public enum LibeventDiagnostics {
    /// How serious a libevent message is.
    public enum Severity: Sendable, Equatable {
        /// Debug output (only produced when libevent's debug logging is on).
        case debug
        /// An informational message.
        case message
        /// Something went wrong but libevent carries on.
        case warning
        /// An error.
        case error
    }

    /// The signature of a diagnostics handler. It is called on whichever loop thread libevent
    /// reports from, so it must be thread-safe.
    public typealias Handler = @Sendable (Severity, String) -> Void

    /// Installs `handler` for every later libevent message. Call once, before any loop starts.
    public static func install(_ handler: @escaping Handler) {
        libeventDiagnosticHandler = handler
        event_set_log_callback(libeventLogTrampoline)
    }

    static func severity(_ code: Int32) -> Severity {
        switch code {
        case EVENT_LOG_DEBUG: return .debug
        case EVENT_LOG_MSG: return .message
        case EVENT_LOG_WARN: return .warning
        default: return .error
        }
    }
}

/// The installed handler. `nonisolated(unsafe)` is sound here only because it is written once,
/// by ``LibeventDiagnostics/install(_:)`` before any loop thread starts, and only read afterwards
/// (thread creation orders the write before every read). libevent's C callback cannot carry a
/// context pointer, so the handler has to live in a global.
nonisolated(unsafe) var libeventDiagnosticHandler: LibeventDiagnostics.Handler?
