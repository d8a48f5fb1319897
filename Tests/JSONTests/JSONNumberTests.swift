import Foundation
import JSON
import XCTest

/// Integers and timestamps written straight into bytes read back as what they were.
final class JSONNumberTests: XCTestCase {
    func testIntegersInDecimal() {
        for value in [0, 7, 10, 99, 1234567890, -1, -42, Int.max, Int.min] {
            var out: [UInt8] = []
            JSONNumber.append(value, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(value))
        }
    }

    func testTheTimestampIsISO8601WithMillisecondsInUTC() throws {
        let text = UTCTimestamp.now()
        let pattern = try NSRegularExpression(pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#)
        XCTAssertEqual(pattern.numberOfMatches(in: text, range: NSRange(text.startIndex..., in: text)), 1, text)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try XCTUnwrap(formatter.date(from: text), text)
        XCTAssertLessThan(abs(parsed.timeIntervalSinceNow), 5)
    }
}
