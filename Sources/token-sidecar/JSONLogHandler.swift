import Foundation
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

    /// UTC, ISO 8601 with milliseconds: "2026-11-22T12:27:34.160Z". Formatted by hand: access
    /// lines are written per request, and Foundation's formatters cost more than the proxying.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let time = Self.timestamp()
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
        LogWriter.shared.write(Array(line.utf8))
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
