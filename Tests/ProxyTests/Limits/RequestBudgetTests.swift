import XCTest
@testable import Proxy

/// The budget of `limits.budget`: so many requests per calendar period, then 429 until the
/// next period starts.
final class RequestBudgetTests: XCTestCase {
    func testTheBudgetIsSpentThenRenewedAtThePeriodBoundary() {
        var budget = RequestBudget(requests: 2, period: 60)
        let start = 1_800_000_000 - 1_800_000_000 % 60 + 50  // 50 s into a minute
        XCTAssertNil(budget.take(at: start))
        XCTAssertNil(budget.take(at: start + 1))
        XCTAssertEqual(budget.remaining(at: start + 2), 0)
        XCTAssertEqual(budget.take(at: start + 2), 8, "until the next minute")
        XCTAssertEqual(budget.remaining(at: start + 10), 2, "a new minute")
        XCTAssertNil(budget.take(at: start + 10))
        budget.refund(at: start + 10)
        XCTAssertEqual(budget.remaining(at: start + 10), 2, "a refund gives it back")
        budget.refund(at: start + 200)
        XCTAssertEqual(budget.remaining(at: start + 200), 2, "never more than the budget")
    }

    func testADayStartsAtMidnightUTC() {
        var budget = RequestBudget(requests: 1, period: 86_400)
        let midnight = 1_800_000_000 - 1_800_000_000 % 86_400
        XCTAssertNil(budget.take(at: midnight + 3600))
        XCTAssertEqual(budget.take(at: midnight + 3600), 86_400 - 3600)
        XCTAssertNil(budget.take(at: midnight + 86_400))
    }
}
