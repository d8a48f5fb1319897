import Admin
import Foundation
import TestSupport
import XCTest

final class WallClockTimeTests: XCTestCase {
    func testKnownInstants() {
        XCTAssertEqual(WallClockTime(secondsSince1970: 0).iso8601, "1970-01-01T00:00:00Z")
        XCTAssertEqual(WallClockTime(secondsSince1970: 951_782_400).iso8601, "2000-02-29T00:00:00Z")
        XCTAssertEqual(WallClockTime(secondsSince1970: 1_700_000_000.9).iso8601, "2023-11-14T22:13:20Z")
        XCTAssertEqual(WallClockTime(secondsSince1970: -1).iso8601, "1969-12-31T23:59:59Z")
    }

    func testAgreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double(Int64.random(in: -2_000_000_000...8_000_000_000, using: &generator))
            XCTAssertEqual(WallClockTime(secondsSince1970: seconds).iso8601,
                           formatter.string(from: Date(timeIntervalSince1970: seconds)))
        }
    }
}
