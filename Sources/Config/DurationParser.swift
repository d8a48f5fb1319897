/// Parses durations written as a non-negative decimal number followed by a
/// unit: `500ms`, `5s`, `2m`, `1h`, `1.5s`. No spaces, no sign, no
/// compound forms (`1m30s`); precision is whole nanoseconds (truncated).
public enum DurationParser {
    /// The duration, or nil when the text is not a valid duration.
    public static func parse(_ text: String) -> Duration? {
        try? parseResult(text).get()
    }

    /// Units by suffix, in nanoseconds.
    private static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60 * 1_000_000_000),
        ("h", 3_600 * 1_000_000_000),
    ]

    /// Like `parse`, but says what is wrong (for config problems).
    static func parseResult(_ text: String) -> Result<Duration, ProblemMessage> {
        let usage = "expected a number followed by ms, s, m or h, e.g. 500ms, 5s, 1.5m"
        if text.hasPrefix("-") { return .failure(ProblemMessage("duration must not be negative")) }
        let number = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = text[number.endIndex...]
        if number.isEmpty { return .failure(ProblemMessage("invalid duration '\(text)': \(usage)")) }
        if unit.isEmpty { return .failure(ProblemMessage("duration '\(text)' has no unit: \(usage)")) }
        guard let scale = units.first(where: { $0.suffix == unit })?.nanoseconds else {
            return .failure(ProblemMessage("duration '\(text)' has an unknown unit '\(unit)': \(usage)"))
        }
        let pieces = number.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count <= 2, !pieces[0].isEmpty, pieces.count == 1 || !pieces[1].isEmpty,
              let whole = Int64(pieces[0])
        else {
            return .failure(ProblemMessage("invalid duration '\(text)': \(usage)"))
        }
        let (wholeNanos, overflow) = whole.multipliedReportingOverflow(by: scale)
        if overflow { return .failure(ProblemMessage("duration '\(text)' is too large")) }
        var fractionNanos: Int64 = 0
        if pieces.count == 2 {
            // Only as many fraction digits as can matter at nanosecond
            // precision; the rest are truncated (and keep Int64 in range).
            let digits = pieces[1].prefix(13)
            var divisor: Int64 = 1
            for _ in digits { divisor *= 10 }
            let fraction = Int64(digits) ?? 0
            // fraction * scale can exceed Int64 (13 digits * 3.6e12), so
            // multiply and divide at double width.
            let product = fraction.multipliedFullWidth(by: scale)
            fractionNanos = divisor.dividingFullWidth(product).quotient
        }
        let (total, overflow2) = wholeNanos.addingReportingOverflow(fractionNanos)
        if overflow2 { return .failure(ProblemMessage("duration '\(text)' is too large")) }
        return .success(.nanoseconds(total))
    }
}
