import TokenManager
import XCTest
import TestSupport

final class BackoffTests: XCTestCase {
    func testCeilingDoublesUpToTheCap() {
        let backoff = Backoff()
        XCTAssertEqual((0..<10).map { backoff.ceiling(attempt: $0) }, [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(32),
            .seconds(60), .seconds(60), .seconds(60),
        ])
        XCTAssertEqual(backoff.ceiling(attempt: 10_000), .seconds(60))
    }

    func testFullJitterStaysWithinBoundsAndSpreads() {
        var random = SplitMix64(seed: 42)
        let backoff = Backoff()
        for attempt in 0..<12 {
            let ceiling = backoff.ceiling(attempt: attempt)
            let delays = (0..<200).map { _ in backoff.delay(attempt: attempt, using: &random) }
            XCTAssertTrue(delays.allSatisfy { $0 >= .zero && $0 <= ceiling }, "attempt \(attempt)")
            // Full jitter: both halves of the range are used.
            XCTAssertTrue(delays.contains { $0 < ceiling / 2 } && delays.contains { $0 > ceiling / 2 }, "attempt \(attempt)")
        }
    }

    func testSameSeedSameDelays() {
        var a = SplitMix64(seed: 7), b = SplitMix64(seed: 7)
        let backoff = Backoff(base: .seconds(1), cap: .seconds(10))
        XCTAssertEqual((0..<8).map { backoff.delay(attempt: $0, using: &a) }, (0..<8).map { backoff.delay(attempt: $0, using: &b) })
    }
}
