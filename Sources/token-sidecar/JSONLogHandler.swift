import EventLoop
import Foundation
import JSON
import Logging

/// A swift-log handler writing one JSON object per line to stderr (readable text on a terminal).
///
/// Each line goes to ``LogWriter`` whole, so lines from different worker threads never
/// interleave; while the proxy runs, a background thread writes them (a slow destination never
/// blocks a loop).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    private let terminal = isatty(2) == 1

    init(label: String) { self.label = label }

    /// UTC, ISO 8601 with milliseconds: "2026-11-22T12:27:34.160Z".
    static func timestamp() -> String { UTCTimestamp.now() }

    /// Appends ``timestamp()`` as bytes.
    static func appendTimestamp(to out: inout [UInt8]) { UTCTimestamp.append(to: &out) }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata {
            if merged.isEmpty { merged = extra } else { merged.merge(extra) { _, new in new } }
        }
        var out: [UInt8] = []
        out.reserveCapacity(320)
        if terminal {
            var line = "\(Self.timestamp()) \(event.level) \(event.message)"
            for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
            out.append(contentsOf: line.utf8)
        } else {
            out.append(contentsOf: Self.timePrefix)
            Self.appendTimestamp(to: &out)
            out.append(contentsOf: Self.levelKey)
            JSONString.append(event.level.rawValue, to: &out)
            out.append(contentsOf: Self.messageKey)
            JSONString.append(event.message.description, to: &out)
            for key in merged.keys.sorted() {
                out.append(0x2c)
                JSONString.append(key, to: &out)
                out.append(0x3a)
                switch merged[key]! {
                case .string(let text): JSONString.append(text, to: &out)
                case .stringConvertible(let value): JSONString.append(value.description, to: &out)
                case let other: JSONString.append("\(other)", to: &out)
                }
            }
            out.append(0x7d)
        }
        out.append(0x0a)
        LogWriter.shared.write(out)
    }

    private static let timePrefix = Array(#"{"time":""#.utf8)
    private static let levelKey = Array(#"","level":"#.utf8)
    private static let messageKey = Array(#","msg":"#.utf8)

}
