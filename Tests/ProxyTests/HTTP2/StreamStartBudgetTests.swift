@testable import Proxy
import XCTest

/// The worker's budget of HTTP/2 stream starts between refills, and when it asks for one.
final class StreamStartBudgetTests: XCTestCase {
    func testStartsOneAtATimeAskForARefillOncePerStepNotEach() {
        var budget = StreamStartBudget(capacity: 500)
        XCTAssertEqual(budget.refillStep, 62)
        for call in 1...61 {
            let (granted, ask) = budget.take(1)
            XCTAssertEqual(granted, 1)
            XCTAssertFalse(ask, "start \(call): an eighth is not spent yet")
        }
        let (granted, ask) = budget.take(1)
        XCTAssertEqual(granted, 1)
        XCTAssertTrue(ask, "the 62nd start asks")
        // Asked once: more starts before the refill comes do not ask again.
        for _ in 0..<100 { XCTAssertFalse(budget.take(1).askRefill) }
        XCTAssertEqual(budget.left, 500 - 162)
        budget.refill()
        XCTAssertEqual(budget, StreamStartBudget(capacity: 500), "full again, nothing asked")
    }

    func testABurstGetsWhatIsLeftAndTheRestWaitsForTheRefill() {
        var budget = StreamStartBudget(capacity: 500)
        _ = budget.take(30)
        let burst = budget.take(1000)
        XCTAssertEqual(burst.granted, 470, "never more than the budget between refills")
        XCTAssertTrue(burst.askRefill)
        XCTAssertEqual(budget.take(5).granted, 0, "spent until the refill")
        XCTAssertFalse(budget.waiting(), "a connection waiting finds the refill asked for already")
        budget.refill()
        XCTAssertEqual(budget.take(1000).granted, 500)
    }

    func testAConnectionWaitingAsksForARefillEvenWithLittleSpent() {
        var budget = StreamStartBudget(capacity: 500)
        XCTAssertEqual(budget.take(3).granted, 3)
        XCTAssertTrue(budget.waiting(), "one connection's share ran out: the others are served after a refill")
        XCTAssertFalse(budget.waiting())
        XCTAssertFalse(budget.take(100).askRefill, "asked already")
        budget.refill()
        XCTAssertTrue(budget.waiting())
    }

    func testNothingWantedTakesNothing() {
        var budget = StreamStartBudget(capacity: 4)
        XCTAssertEqual(budget.refillStep, 1, "a small budget asks at its first start")
        let none = budget.take(0)
        XCTAssertEqual(none.granted, 0)
        XCTAssertFalse(none.askRefill)
        XCTAssertEqual(budget.take(-3).granted, 0)
        XCTAssertEqual(budget.left, 4)
        let all = budget.take(9)
        XCTAssertEqual(all.granted, 4)
        XCTAssertTrue(all.askRefill)
    }
}
