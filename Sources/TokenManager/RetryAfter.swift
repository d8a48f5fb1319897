/// Parses `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate HTTP-date.
public enum RetryAfter {
    /// The delay `value` asks for, or nil when it cannot be parsed. A date in the past gives zero.
    /// - Parameter wallClock: now, in seconds since 1970 (for HTTP-dates).
    public static func parse(_ value: String, wallClock: Double) -> Duration? {
        let text = value.trimmingPrefix(while: { $0 == " " || $0 == "\t" })
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard text.utf8.count <= 9, let seconds = Int(text) else { return .seconds(999_999_999) }
            return .seconds(seconds)
        }
        guard let date = imfFixdate(String(text)) else { return nil }
        let delta = date - wallClock
        return delta > 0 ? .seconds(delta) : .zero
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → seconds since 1970.
    static func imfFixdate(_ text: String) -> Double? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              parts[1].count == 2, let day = Int(parts[1]), parts[3].count == 4, let year = Int(parts[3]),
              let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Days since 1970-01-01 (proleptic Gregorian), after Howard Hinnant's algorithm.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
