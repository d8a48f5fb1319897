import Admin
import TestSupport
import XCTest

final class HistogramTests: XCTestCase {
    func testBoundsAreInclusiveUpperLimits() {
        var histogram = Histogram(upperBounds: [1, 2, 5])
        for value in [0.5, 1, 1.5, 2, 4.9, 5, 7, -3] { histogram.observe(value) }
        XCTAssertEqual(histogram.cumulativeBuckets.map(\.cumulativeCount), [3, 5, 7])
        XCTAssertEqual(histogram.count, 8)
        XCTAssertEqual(histogram.sum, 0.5 + 1 + 1.5 + 2 + 4.9 + 5 + 7 - 3, accuracy: 1e-12)
    }

    func testNaNIsIgnoredAndInfinityCountsAboveEveryBound() {
        var histogram = Histogram(upperBounds: [1])
        histogram.observe(.nan)
        histogram.observe(.infinity)
        XCTAssertEqual(histogram.count, 1)
        XCTAssertEqual(histogram.cumulativeBuckets.map(\.cumulativeCount), [0])
    }

    func testMergeAddsEverything() {
        var a = Histogram(), b = Histogram()
        a.observe(0.001)
        a.observe(0.3)
        b.observe(0.3)
        b.observe(20)
        let merged = a.merged(with: b)
        XCTAssertEqual(merged.count, 4)
        XCTAssertEqual(merged.sum, 20.601, accuracy: 1e-12)
        var all = Histogram()
        for value in [0.001, 0.3, 0.3, 20] { all.observe(value) }
        XCTAssertEqual(merged.cumulativeBuckets, all.cumulativeBuckets)
    }

    func testDurationsAreSeconds() {
        var histogram = Histogram()
        histogram.observe(Duration.milliseconds(3))
        XCTAssertEqual(histogram.sum, 0.003, accuracy: 1e-12)
        XCTAssertEqual(histogram.cumulativeBuckets.first { $0.cumulativeCount == 1 }?.upperBound, 0.005)
    }

    func testDefaultLatencyBounds() {
        XCTAssertEqual(Histogram().upperBounds,
                       [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    }
}
