import XCTest

@testable import Proxy

/// A pipe's debt to its HTTP/2 windows: reported only as the session drains, and all of it
/// when the pipe leaves its stream.
final class StreamWindowCreditTests: XCTestCase {
    func testBytesAreReportedAsTheInputDrainsAndTheRestWhenThePipeLeaves() {
        var credit = StreamWindowCredit()
        credit.deliver(1000)
        XCTAssertTrue(credit.owes)
        XCTAssertEqual(credit.takeConsumed(left: 1000), 0, "nothing taken yet")
        XCTAssertEqual(credit.takeConsumed(left: 1010), 0, "framing left in the input counts as body")
        XCTAssertEqual(credit.takeConsumed(left: 400), 600)
        XCTAssertEqual(credit.takeConsumed(left: 400), 0, "reported once")
        credit.deliver(50)
        XCTAssertEqual(credit.takeUnreported(), 450, "leaving: everything not reported")
        XCTAssertFalse(credit.owes)
        XCTAssertEqual(credit.takeUnreported(), 0)
    }
}
