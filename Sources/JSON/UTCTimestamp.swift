import Glibc

/// The time of a log line or a record: UTC, ISO 8601 with milliseconds
/// ("2026-11-22T12:27:34.160Z"), formatted by hand — lines are written per request, and
/// Foundation's formatters cost more than the proxying.
public enum UTCTimestamp {
    /// Appends the current time.
    public static func append(to out: inout [UInt8]) {
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

    /// The current time as a string.
    public static func now() -> String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
