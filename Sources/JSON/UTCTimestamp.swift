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
        let year = Int(parts.tm_year) + 1900
        two(year / 100, &out)
        two(year % 100, &out)
        out.append(0x2d)
        two(Int(parts.tm_mon) + 1, &out)
        out.append(0x2d)
        two(Int(parts.tm_mday), &out)
        out.append(0x54)
        two(Int(parts.tm_hour), &out)
        out.append(0x3a)
        two(Int(parts.tm_min), &out)
        out.append(0x3a)
        two(Int(parts.tm_sec), &out)
        out.append(0x2e)
        let millis = now.tv_nsec / 1_000_000
        out.append(UInt8(0x30 + millis / 100))
        two(millis % 100, &out)
        out.append(0x5a)
    }

    /// Appends `value` (0...99) as two digits.
    @inline(__always)
    private static func two(_ value: Int, _ out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: 0x30 + value / 10))
        out.append(UInt8(truncatingIfNeeded: 0x30 + value % 10))
    }

    /// The current time as a string.
    public static func now() -> String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
