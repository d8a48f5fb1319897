import Glibc
import XCTest

@testable import EventLoop

/// The loop's conversions of timeouts for libevent and its timers: exact to the nanosecond,
/// zero for what is not positive, saturating instead of wrapping.
final class EventLoopDurationTests: XCTestCase {
    func testDurationsConvertExactlyToNanoseconds() {
        XCTAssertEqual(EventLoop.nanoseconds(.zero), 0)
        XCTAssertEqual(EventLoop.nanoseconds(.nanoseconds(1)), 1)
        XCTAssertEqual(EventLoop.nanoseconds(.milliseconds(300)), 300_000_000)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(30)), 30_000_000_000)
        // Past 2^64 attoseconds (about 18.4 s) the count has a high half.
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(19) + .nanoseconds(7)), 19_000_000_007)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(86_400 * 365)), 31_536_000_000_000_000)
        // Below a nanosecond is truncated; negative is zero; beyond UInt64 saturates.
        XCTAssertEqual(EventLoop.nanoseconds(Duration(attoseconds: 1_999_999_999)), 1)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(-5)), 0)
        XCTAssertEqual(EventLoop.nanoseconds(Duration(attoseconds: -1)), 0)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(Int64.max)), .max)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(18_446_744_073) + .nanoseconds(709_551_615)), .max)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(18_446_744_073) + .nanoseconds(709_551_616)), .max)
        XCTAssertEqual(EventLoop.nanoseconds(.seconds(18_446_744_073)), 18_446_744_073_000_000_000)
    }

    func testDurationsConvertToTimevals() {
        let tv = EventLoop.timeval(.seconds(30) + .microseconds(250) + .nanoseconds(999))
        XCTAssertEqual(tv.tv_sec, 30)
        XCTAssertEqual(tv.tv_usec, 250)
        let negative = EventLoop.timeval(.milliseconds(-1))
        XCTAssertEqual(negative.tv_sec, 0)
        XCTAssertEqual(negative.tv_usec, 0)
    }
}
