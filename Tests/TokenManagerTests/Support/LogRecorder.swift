import Logging

/// Collects log lines (level, message and metadata rendered as text) for assertions.
final class LogRecorder: Sendable {
    let lines = Locked<[String]>([])

    var logger: Logger {
        Logger(label: "test") { _ in RecordingHandler(recorder: self) }
    }

    var text: String { lines.value.joined(separator: "\n") }
}

private struct RecordingHandler: LogHandler {
    let recorder: LogRecorder
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level, message = event.message
        let fields = self.metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(level) \(message) \(fields)"
        recorder.lines.update { $0.append(text) }
    }
}
