import Config
import EventLoop
import Glibc

/// Where audit records go (`audit.file`): a file opened once for appending (created 0600), or
/// stdout. Workers only queue each line (``LogWriter``): a slow disk never blocks a loop; past
/// ``LogWriter/capacity`` waiting bytes, lines are dropped and the drop is reported in the file.
public final class AuditLog: Sendable {
    private let writer: LogWriter
    /// The configured destination (`-`: stdout).
    public let file: String

    /// Opens `config.file` (or takes stdout); throws a message naming the file and the reason.
    public init(_ config: AuditConfig) throws(AuditLogError) {
        file = config.file
        if config.toStandardOutput {
            writer = LogWriter(descriptor: 1)
            return
        }
        let descriptor = open(config.file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw AuditLogError(message: "audit.file: cannot open '\(config.file)' for appending: \(String(cString: strerror(errno)))")
        }
        writer = LogWriter(descriptor: descriptor)
    }

    /// From now on lines are written by a background thread.
    public func start() { writer.startBackgroundWriting() }

    /// Queues one record.
    public func write(_ record: AuditRecord) { writer.write(record.line()) }

    /// Waits (at most `limit`) until every queued record was handed to the kernel.
    public func flush(within limit: Duration = LogWriter.exitFlushLimit) { writer.flush(within: limit) }
}

/// Why the audit destination could not be opened.
public struct AuditLogError: Error, CustomStringConvertible {
    /// What failed, naming the key and the file.
    public let message: String
    public var description: String { message }
}
