import EventLoop
import Logging

/// Process-wide preparation for `run`, done once before any loop or listener exists.
enum ProcessSetup {
    /// Sends libevent's diagnostics through `logger` and raises the descriptor limit.
    ///
    /// The resulting limit is logged once, in the proxy's "listening" line next to the
    /// `maxClientConnections` derived from it: that line must stay the first one the process
    /// writes (supervisors and tests read the bound address from it).
    static func prepare(logger: Logger) {
        routeLibeventDiagnostics(to: logger)
        DescriptorLimit.raiseToMaximum()
    }

    /// libevent prints its own warnings to stderr as plain text (`[warn] ...`); routed through the
    /// logger, every line the process writes has the configured (JSON) format.
    static func routeLibeventDiagnostics(to logger: Logger) {
        var libeventLogger = logger
        libeventLogger[metadataKey: "component"] = "libevent"
        let routed = libeventLogger
        LibeventDiagnostics.install { severity, message in
            routed.log(level: level(of: severity), "\(message)")
        }
    }

    private static func level(of severity: LibeventDiagnostics.Severity) -> Logger.Level {
        switch severity {
        case .debug: return .debug
        case .message: return .info
        case .warning: return .warning
        case .error: return .error
        }
    }
}
