import EventLoop
import JSON
import Glibc
import Proxy

/// Access records as log lines, formatted exactly as ``JSONLogHandler`` formats an `access`
/// message with the same metadata — the same keys in the same (sorted) order, the same text
/// form on a terminal — but written straight into bytes: through swift-log's metadata
/// dictionary a line cost more than proxying the request.
struct JSONAccessLogWriter: AccessLogWriter {
    /// Whether lines are written at all (the log level lets `info` through).
    let enabled: Bool
    private let terminal = isatty(2) == 1

    init(enabled: Bool) { self.enabled = enabled }

    func write(_ record: AccessRecord) {
        guard enabled else { return }
        LogWriter.shared.write(terminal ? Self.text(record) : Self.json(record))
    }

    /// The fields in key order (the order ``JSONLogHandler`` sorts metadata keys into).
    private static func fields(_ record: AccessRecord) -> [(key: StaticString, value: String)] {
        var fields: [(key: StaticString, value: String)] = [
            ("auth", record.auth.rawValue),
            ("authority", record.authority),
            ("bytes_in", String(record.bytesIn)),
            ("bytes_out", String(record.bytesOut)),
            ("duration_ms", String(record.durationMs)),
            ("method", record.method),
            ("path", record.path),
        ]
        if let placement = record.placement { fields.append(("placement", placement)) }
        fields.append(("protocol", record.protocolName))
        if let proxyStatus = record.proxyStatus { fields.append(("proxy_status", proxyStatus)) }
        fields.append(("route", record.route))
        fields.append(("status", String(record.status)))
        if let token = record.tokenFingerprint { fields.append(("token", token)) }
        if let scope = record.scope { fields.append(("scope", scope)) }
        if let upstream = record.upstream { fields.append(("upstream", upstream)) }
        fields.append(("worker", String(record.worker)))
        return fields
    }

    static func json(_ record: AccessRecord) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(384)
        out.append(contentsOf: prefix)
        JSONLogHandler.appendTimestamp(to: &out)
        out.append(contentsOf: levelAndMessage)
        for field in fields(record) {
            out.append(0x2c)
            out.append(0x22)
            out.append(contentsOf: UnsafeBufferPointer(start: field.key.utf8Start, count: field.key.utf8CodeUnitCount))
            out.append(contentsOf: [0x22, 0x3a])
            JSONString.append(field.value, to: &out)
        }
        out.append(contentsOf: [0x7d, 0x0a])
        return out
    }

    static func text(_ record: AccessRecord) -> [UInt8] {
        var line = "\(JSONLogHandler.timestamp()) info access"
        for field in fields(record) { line += " \(field.key)=\(field.value)" }
        line += "\n"
        return Array(line.utf8)
    }

    private static let prefix = Array(#"{"time":""#.utf8)
    private static let levelAndMessage = Array(#"","level":"info","msg":"access""#.utf8)
}
