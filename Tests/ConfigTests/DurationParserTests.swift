import Config
import XCTest

final class DurationParserTests: XCTestCase {
    func testValidDurations() {
        XCTAssertEqual(DurationParser.parse("500ms"), .milliseconds(500))
        XCTAssertEqual(DurationParser.parse("5s"), .seconds(5))
        XCTAssertEqual(DurationParser.parse("2m"), .seconds(120))
        XCTAssertEqual(DurationParser.parse("1h"), .seconds(3600))
        XCTAssertEqual(DurationParser.parse("1.5s"), .milliseconds(1500))
        XCTAssertEqual(DurationParser.parse("0.25m"), .seconds(15))
        XCTAssertEqual(DurationParser.parse("0.5ms"), .microseconds(500))
        XCTAssertEqual(DurationParser.parse("0s"), .zero)
        XCTAssertEqual(DurationParser.parse("1.0000000001s"), .seconds(1))  // truncated to nanoseconds
    }

    func testInvalidDurations() {
        for text in ["", "-5s", "5", "5x", "5 s", " 5s", "s", ".5s", "5.s", "1.2.3s", "1m30s", "5S", "+5s", "1e3s", "99999999999999h"] {
            XCTAssertNil(DurationParser.parse(text), text)
        }
    }
}
