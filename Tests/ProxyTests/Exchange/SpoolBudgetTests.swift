@testable import Proxy
import XCTest

/// The spool budget: shared by every response, at most a share each, so one client asking for a
/// huge response and reading nothing cannot take the whole spool (nor make its backend send
/// all of it at once).
final class SpoolBudgetTests: XCTestCase {
    func testAResponseOfKnownLengthIsSpooledOnlyWithinItsShare() {
        let budget = SpoolBudget(directory: "/tmp", limit: 1 << 30)
        XCTAssertEqual(budget.responseLimit, 16 << 20, "1/64 of the default 1 GiB")
        XCTAssertTrue(budget.hasRoom(for: 16 << 20))
        XCTAssertFalse(budget.hasRoom(for: (16 << 20) + 1), "above its share, though the budget has room")
        XCTAssertFalse(budget.hasRoom(for: 64 << 20))
        XCTAssertTrue(budget.hasRoom(for: nil), "an unknown length spools its share at a time")
    }

    func testALargeBudgetGivesLargerSharesAndASmallOneItsWhole() {
        XCTAssertEqual(SpoolBudget(directory: "/tmp", limit: 4 << 30).responseLimit, 64 << 20)
        XCTAssertEqual(SpoolBudget(directory: "/tmp", limit: 64 << 20).responseLimit, 16 << 20, "never below 16 MiB")
        XCTAssertEqual(SpoolBudget(directory: "/tmp", limit: 8 << 20).responseLimit, 8 << 20, "nor above the budget")
        XCTAssertEqual(SpoolBudget(directory: "/tmp", limit: 0).responseLimit, 0)
        XCTAssertFalse(SpoolBudget(directory: "/tmp", limit: 0).hasRoom(for: 1), "0 turns spooling off")
    }

    func testWhatIsTakenLeavesLessRoom() {
        let budget = SpoolBudget(directory: "/tmp", limit: 32 << 20)
        XCTAssertEqual(budget.reserve(upTo: 20 << 20), 20 << 20)
        XCTAssertFalse(budget.hasRoom(for: 16 << 20), "12 MiB left")
        XCTAssertTrue(budget.hasRoom(for: 12 << 20))
        budget.release(20 << 20)
        XCTAssertTrue(budget.hasRoom(for: 16 << 20))
    }
}
