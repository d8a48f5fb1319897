import EventLoop
import Glibc
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

    /// glibc keeps a per-thread cache of freed small blocks (tcache) of only 7 per size class.
    /// A worker serving hundreds of HTTP/2 streams at once frees a few dozen blocks of each
    /// size per loop iteration, so most frees and allocations missed that cache and took
    /// glibc's slower bins: at 50 connections × 10 streams, 8.8k instructions per stream (a
    /// seventh of the proxy's), 4.6k with a cache of ``tcacheCount``. The cache is set only by
    /// the `GLIBC_TUNABLES` environment variable, read when a process starts: `run` starts
    /// itself again, once, with it set. An operator who sets `GLIBC_TUNABLES` (even empty)
    /// keeps their own setting, and nothing is re-executed.
    static func tuneAllocator() {
        guard getenv(tunablesVariable) == nil else { return }
        var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        guard length > 0 else { return }
        setenv(tunablesVariable, "glibc.malloc.tcache_count=\(tcacheCount)", 1)
        execv(path, CommandLine.unsafeArgv)
        // Not re-executed (no /proc, a seccomp policy): run as started, untuned.
        unsetenv(tunablesVariable)
    }

    /// The environment variable glibc reads its tunables from.
    static let tunablesVariable = "GLIBC_TUNABLES"
    /// Freed blocks kept per size class and thread: 64 classes of 32 bytes to 1 KiB, so at most
    /// about 9 MiB per thread, if every class ever held 256 free blocks at once.
    static let tcacheCount = 256

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
