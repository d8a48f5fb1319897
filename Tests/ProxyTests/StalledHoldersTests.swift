@testable import Proxy
import XCTest

/// Which stalled holder gives its connection up: the one that stalled first, per key, once.
final class StalledHoldersTests: XCTestCase {
    private final class Holder {}

    func testTheHolderThatStalledFirstIsTakenPerKey() {
        var stalled = StalledHolders<Holder>()
        let (a, b, c) = (Holder(), Holder(), Holder())
        let start = ContinuousClock.now
        stalled.mark(b, key: "x:80", now: start + .milliseconds(5))
        stalled.mark(a, key: "x:80", now: start)
        stalled.mark(c, key: "y:80", now: start - .seconds(1))
        XCTAssertEqual(stalled.count, 3)
        XCTAssertTrue(stalled.takeOldest(key: "x:80") === a, "the first to stall, not the first marked")
        XCTAssertTrue(stalled.takeOldest(key: "x:80") === b)
        XCTAssertNil(stalled.takeOldest(key: "x:80"), "a holder is taken once")
        XCTAssertTrue(stalled.takeOldest(key: "y:80") === c, "keys are separate")
        XCTAssertEqual(stalled.count, 0)
    }

    func testARepeatedMarkKeepsTheFirstTimeAndAnUnmarkedHolderIsNeverTaken() {
        var stalled = StalledHolders<Holder>()
        let (a, b) = (Holder(), Holder())
        let start = ContinuousClock.now
        stalled.mark(a, key: "x:80", now: start)
        stalled.mark(b, key: "x:80", now: start + .milliseconds(1))
        stalled.mark(a, key: "x:80", now: start + .seconds(9))
        XCTAssertTrue(stalled.takeOldest(key: "x:80") === a, "a second pause does not make a holder younger")
        stalled.mark(a, key: "x:80", now: start + .seconds(10))
        stalled.unmark(b, key: "x:80")
        stalled.unmark(b, key: "x:80")
        XCTAssertTrue(stalled.takeOldest(key: "x:80") === a, "b read again: it is not a candidate")
        XCTAssertNil(stalled.takeOldest(key: "x:80"))
        stalled.unmark(a, key: "missing")
        XCTAssertEqual(stalled.count, 0)
    }
}
