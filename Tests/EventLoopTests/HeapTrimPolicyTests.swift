import EventLoop
import XCTest

/// When freed memory goes back to the system: after a lot of client output was given back, or
/// once the heap keeps much more free memory than it did at its lowest — and not again and
/// again for memory that stays free.
final class HeapTrimPolicyTests: XCTestCase {
    func testReleasedClientOutputTrims() {
        var policy = HeapTrimPolicy()
        XCTAssertFalse(policy.shouldTrim(released: 0, free: 1 << 20))
        XCTAssertFalse(policy.shouldTrim(released: (4 << 20) - 1, free: 1 << 20))
        XCTAssertTrue(policy.shouldTrim(released: 4 << 20, free: 1 << 20))
    }

    func testFreedSessionsTrimOnceAndNotAgainWhileTheMemoryStaysFree() {
        var policy = HeapTrimPolicy()
        // Idle: a little free heap.
        XCTAssertFalse(policy.shouldTrim(released: 0, free: 2 << 20))
        // A thousand sessions ended (no budget counted them): 25 MiB free in the heap.
        XCTAssertTrue(policy.shouldTrim(released: 0, free: 25 << 20))
        // The chunks stay free after the trim (only their pages went back): no trim every look.
        for _ in 0..<5 { XCTAssertFalse(policy.shouldTrim(released: 0, free: 25 << 20)) }
        XCTAssertFalse(policy.shouldTrim(released: 0, free: (25 << 20) + (8 << 20) - 1))
    }

    func testMemoryReusedAndFreedAgainTrimsAgain() {
        var policy = HeapTrimPolicy()
        XCTAssertTrue(policy.shouldTrim(released: 0, free: 25 << 20))
        // The next burst takes the free chunks back (their pages are resident again)...
        XCTAssertFalse(policy.shouldTrim(released: 0, free: 3 << 20))
        // ...and frees them when it ends.
        XCTAssertTrue(policy.shouldTrim(released: 0, free: 24 << 20))
    }

    func testTheHeapReportsItsFreeBytes() {
        XCTAssertGreaterThanOrEqual(HeapTrim.freeBytes(), 0)
    }
}
