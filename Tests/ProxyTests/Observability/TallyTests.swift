import XCTest
@testable import Proxy

final class TallyTests: XCTestCase {
    func testRunsAndChangesOfKeyAllCount() {
        let a = RequestCounterKey(route: "api.test", code: 200), b = RequestCounterKey(route: "api.test", code: 502)
        var tally = RequestTally()
        for key in [a, a, b, a, a, a, b] { tally.count(key) }
        XCTAssertEqual(tally.counts, [a: 5, b: 2])

        var folded = RequestTally([a: 5])
        folded.count(b)
        folded.count(b)
        XCTAssertEqual(folded, tally, "equal when they count the same, however much is folded")

        var metrics = ProxyMetrics()
        metrics.requestTally = tally
        var total = ProxyMetrics()
        total.merge(metrics)
        total.merge(metrics)
        XCTAssertEqual(total.requests, [a: 10, b: 4])
        total.requests[RequestCounterKey(route: "other", code: 404)] = 1
        XCTAssertEqual(total.requests.count, 3)
    }
}
