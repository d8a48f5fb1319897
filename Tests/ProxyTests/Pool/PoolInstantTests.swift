import XCTest
@testable import Proxy

/// The pool's clock values: moved by durations either way (saturating), and subtracted.
final class PoolInstantTests: XCTestCase {
    func testInstantsMoveBySubtractAndSaturate() {
        let start = PoolInstant(nanoseconds: 5_000_000_000)
        XCTAssertEqual((start + .milliseconds(1500)).nanoseconds, 6_500_000_000)
        XCTAssertEqual((start + .seconds(-2)).nanoseconds, 3_000_000_000)
        XCTAssertEqual((start + .seconds(-10)).nanoseconds, 0)
        XCTAssertEqual((start + .seconds(Int64.max)).nanoseconds, .max)
        XCTAssertEqual((start + .milliseconds(250)) - start, .milliseconds(250))
        XCTAssertEqual(start - (start + .seconds(1)), .seconds(-1))
        XCTAssertLessThan(start, start + .nanoseconds(1))
        XCTAssertLessThanOrEqual(PoolInstant.now.nanoseconds, PoolInstant.now.nanoseconds)
    }
}
