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
    static func timestamp() -> String {
        var bytes: [UInt8] = []
        appendTimestamp(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``timestamp()`` as bytes. Formatted by hand: access lines are written per
    /// request, and Foundation's formatters (or a String per field) cost more than the proxying.
    static func appendTimestamp(to out: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                out.append(UInt8(0x30 + rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4); out.append(0x2d)
        digits(Int(parts.tm_mon) + 1, 2); out.append(0x2d)
        digits(Int(parts.tm_mday), 2); out.append(0x54)
        digits(Int(parts.tm_hour), 2); out.append(0x3a)
        digits(Int(parts.tm_min), 2); out.append(0x3a)
        digits(Int(parts.tm_sec), 2); out.append(0x2e)
        digits(now.tv_nsec / 1_000_000, 3); out.append(0x5a)
    }

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
