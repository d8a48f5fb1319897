import EventLoop
import XCTest

/// Start-up pages: the clean read-only file pages the process touched are found in
/// `/proc/self/smaps` and given back; the process goes on running the code it needs.
final class StartupPagesTests: XCTestCase {
    func testTouchedProgramPagesAreFoundAndGivenBack() throws {
        let first = StartupPages.release()
        XCTAssertGreaterThan(first, 0, "a running test process has resident program text")
        // Only what runs from here on faults back in: far less than was released.
        let second = StartupPages.release()
        XCTAssertLessThan(second, first)
        // The process still works after its pages were dropped.
        XCTAssertEqual([3, 1, 2].sorted(), [1, 2, 3])
    }
}
