/// A point in wall-clock time (seconds since 1970-01-01T00:00:00Z), rendered as ISO 8601 UTC
/// without Foundation.
public struct WallClockTime: Sendable, Equatable, Comparable {
    /// Seconds since the Unix epoch (may be fractional or negative).
    public var secondsSince1970: Double

    /// Creates a time.
    public init(secondsSince1970: Double) {
        self.secondsSince1970 = secondsSince1970
    }

    /// Orders by time.
    public static func < (lhs: WallClockTime, rhs: WallClockTime) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }

    /// `2024-05-01T12:34:56Z` — whole seconds, rounded down, UTC.
    public var iso8601: String {
        let total = Int64(secondsSince1970.rounded(.down))
        let (days, secondOfDay) = floorDivide(total, 86_400)
        let (year, month, day) = WallClockTime.civilDate(fromDays: days)
        let hour = secondOfDay / 3600, minute = secondOfDay / 60 % 60, second = secondOfDay % 60
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))Z"
    }

    /// Year, month, day for a count of days since 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`, proleptic Gregorian calendar).
    static func civilDate(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

private func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
    var quotient = value / divisor
    var remainder = value % divisor
    if remainder < 0 { quotient -= 1; remainder += divisor }
    return (quotient, remainder)
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}
