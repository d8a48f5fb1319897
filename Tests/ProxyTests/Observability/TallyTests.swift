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

    private final class Source: Sendable {}

    func testCountsBySourceMakeTheKeyOnlyWhenSourceOrVariantChange() {
        let first = Source(), second = Source()
        let a = RequestCounterKey(route: "a.test", code: 200), b = RequestCounterKey(route: "b.test", code: 200)
        var made = 0
        var tally = RequestTally()
        func count(_ source: Source, _ variant: Int, _ key: RequestCounterKey) {
            tally.count(for: source, variant) { made += 1; return key }
        }
        count(first, 200, a)
        count(first, 200, a)
        count(first, 200, a)
        XCTAssertEqual(made, 1, "the same source and variant: no key made")
        count(second, 200, a)
        XCTAssertEqual(made, 2, "another source with the same key: the key is made and adds to the same count")
        count(second, 502, RequestCounterKey(route: "a.test", code: 502))
        count(first, 200, b)
        tally.count(a)
        count(first, 200, b)
        XCTAssertEqual(made, 5, "a count without a source forgets the last one")
        XCTAssertEqual(tally.counts, [a: 5, RequestCounterKey(route: "a.test", code: 502): 1, b: 2])
    }
}
