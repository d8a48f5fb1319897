import XCTest
@testable import Proxy

/// The rate of `limits.rate`: a burst at once, then the rate, and how long to wait.
final class TokenBucketTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testABurstThenTheRate() {
        var bucket = TokenBucket(perSecond: 10, burst: 3, now: 0)
        XCTAssertEqual((0..<3).map { _ in bucket.take(at: 0) }, [nil, nil, nil], "the burst at once")
        XCTAssertEqual(bucket.take(at: 0), 1, "empty: retry in a second (whole seconds, at least 1)")
        XCTAssertNil(bucket.take(at: second / 10), "one token per 100 ms")
        XCTAssertNotNil(bucket.take(at: second / 10))
        // A long pause refills to the burst, never beyond.
        XCTAssertEqual(bucket.available(at: 100 * second), 3)
        var admitted = 0
        for tick in 0..<1000 where bucket.take(at: 100 * second + UInt64(tick) * second / 100) == nil { admitted += 1 }
        XCTAssertEqual(admitted, 3 + 99, "10 s at 100 requests a second: the burst and 10 per second")
    }

    func testASlowRateWaitsWholeSeconds() {
        var bucket = TokenBucket(perSecond: 0.2, burst: 1, now: 0)
        XCTAssertNil(bucket.take(at: 0))
        XCTAssertEqual(bucket.take(at: 0), 5, "one token per 5 s")
        XCTAssertEqual(bucket.take(at: 4 * second), 1)
        XCTAssertNil(bucket.take(at: 5 * second))
    }

    func testAClockThatGoesBackTakesNothing() {
        var bucket = TokenBucket(perSecond: 1, burst: 1, now: 10 * second)
        XCTAssertNil(bucket.take(at: 10 * second))
        XCTAssertNotNil(bucket.take(at: 5 * second), "no tokens made from an earlier instant")
        bucket.refund()
        XCTAssertNil(bucket.take(at: 10 * second), "a refund gives the token back")
    }
}
