import Foundation

/// The wall clock, kept in its own file: Foundation's `Timer` would otherwise shadow the loop's.
enum WallClock {
    /// Seconds since 1970.
    static func secondsSince1970() -> Double { Date().timeIntervalSince1970 }
}
