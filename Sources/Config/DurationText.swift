/// Formats durations the way `DurationParser` reads them, for `renderEffective()`.
enum DurationText {
    /// The largest unit that represents `duration` exactly (`5m`, `1500ms`),
    /// or fractional seconds (`0.0000005s`) below a millisecond; `0s` for zero.
    static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return "\(seconds)s" }
        let nanos = scaled + attoseconds / 1_000_000_000
        if nanos == 0 { return "0s" }
        let units: [(suffix: String, nanoseconds: Int64)] = [
            ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000),
        ]
        for unit in units where nanos % unit.nanoseconds == 0 {
            return "\(nanos / unit.nanoseconds)\(unit.suffix)"
        }
        var fraction = String(nanos % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(nanos / 1_000_000_000).\(fraction)s"
    }

    /// `0.8` → `"80%"`, `0.875` → `"87.5%"` (to a millionth of a percent).
    static func percentage(_ fraction: Double) -> String {
        let percent = (fraction * 100 * 1_000_000).rounded() / 1_000_000
        if percent == percent.rounded(), abs(percent) < 1e15 {
            return "\(Int(percent))%"
        }
        return "\(percent)%"
    }
}
