@testable import Proxy
import XCTest

final class AcceptErrorLogTests: XCTestCase {
    func testLogsAtMostOnceASecondWithTheCountOfSuppressedRepeats() {
        var log = AcceptErrorLog()
        let start = ContinuousClock.now
        XCTAssertEqual(log.record(at: start), 0, "the first failure is logged")
        XCTAssertNil(log.record(at: start + .milliseconds(100)))
        XCTAssertNil(log.record(at: start + .milliseconds(999)))
        XCTAssertEqual(log.record(at: start + .seconds(1)), 2, "the next line says how many were held back")
        XCTAssertNil(log.record(at: start + .milliseconds(1500)))
        XCTAssertEqual(log.record(at: start + .seconds(5)), 1)
    }
}
