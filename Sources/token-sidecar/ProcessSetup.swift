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
        // Once: the started process finds the marker (glibc drops GLIBC_TUNABLES itself for a
        // process with raised privileges, setuid or file capabilities: there the marker alone
        // ends it). Not before glibc 2.30, whose cache counts fit in a byte.
        guard getenv(tunablesVariable) == nil, getenv(tunedMarker) == nil,
              let version = glibcVersion(), glibcCountsFit(version: version) else { return }
        var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        guard length > 0 else { return }
        setenv(tunablesVariable, "glibc.malloc.tcache_count=\(tcacheCount)", 1)
        setenv(tunedMarker, "1", 1)
        execv(path, CommandLine.unsafeArgv)
        // Not re-executed (no /proc, a seccomp policy): run as started, untuned.
        unsetenv(tunablesVariable)
        unsetenv(tunedMarker)
    }

    /// The running glibc's version ("2.36"), if it says.
    static func glibcVersion() -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count)
        guard length > 0, length <= buffer.count else { return nil }
        // "glibc 2.36"
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: " ").last.map(String.init)
    }

    /// Whether glibc `version` ("2.36") takes a cache count of ``tcacheCount`` (2.30 and later:
    /// before, the counts were a byte and a larger setting wrapped round, unchecked).
    static func glibcCountsFit(version: String) -> Bool {
        let parts = version.split(separator: ".").prefix(2).compactMap { Int($0) }
        guard parts.count == 2 else { return false }
        return parts[0] > 2 || (parts[0] == 2 && parts[1] >= 30)
    }

    /// The environment variable glibc reads its tunables from.
    static let tunablesVariable = "GLIBC_TUNABLES"
    /// Set for the started process: it does not start again.
    static let tunedMarker = "TOKEN_SIDECAR_ALLOCATOR_TUNED"
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
