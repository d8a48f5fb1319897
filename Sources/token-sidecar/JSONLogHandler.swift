import Foundation
import Logging

/// A swift-log handler writing one JSON object per line to stderr (readable text on a terminal).
///
/// Each line is written with a single `write(2)`, so lines from different worker threads never interleave.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    private let terminal = isatty(2) == 1

    init(label: String) { self.label = label }

    /// UTC, ISO 8601 with milliseconds: "2026-11-22T12:27:34.160Z".
    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let time = Date().formatted(Self.timeFormat)
        var line: String
        if terminal {
            line = "\(time) \(event.level) \(event.message)"
            for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
        } else {
            line = "{\"time\":\(Self.quote(time)),\"level\":\(Self.quote(event.level.rawValue)),\"msg\":\(Self.quote("\(event.message)"))"
            for key in merged.keys.sorted() { line += ",\(Self.quote(key)):\(Self.quote("\(merged[key]!)"))" }
            line += "}"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
