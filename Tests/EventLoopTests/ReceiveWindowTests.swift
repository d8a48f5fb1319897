import EventLoop
import XCTest

/// The receive window of a loopback backend connection: small until the client has taken
/// bytes, then doubling with what it took, back to the kernel's autotuning once the client
/// has taken 1 MiB, and small again after a client that fell behind.
final class ReceiveWindowTests: XCTestCase {
    func testItStartsAtSixteenKiBAndStaysThereUntilTheClientTookTwiceAsMuch() {
        var window = ReceiveWindow(limit: 4 << 20)
        XCTAssertEqual(window.size, 16 * 1024)
        // What the kernel holds for a client that reads nothing (its buffer and the proxy's
        // not-yet-sent allowance) is below twice the window: no growth, no system call.
        for taken in [0, 1, 4096, 20_000, 32 * 1024 - 1] {
            XCTAssertNil(window.grow(taken: taken), "taken \(taken)")
        }
        XCTAssertEqual(window.size, 16 * 1024)
    }

    func testItGrowsByDoublingsToTheLargestNotAboveWhatWasTaken() {
        var window = ReceiveWindow(limit: 4 << 20)
        XCTAssertEqual(window.grow(taken: 32 * 1024), .size(32 * 1024))
        XCTAssertNil(window.grow(taken: 63 * 1024), "below twice the window: unchanged")
        XCTAssertEqual(window.grow(taken: 64 * 1024), .size(64 * 1024))
        // A client that took much more at once skips the steps in between: one call.
        XCTAssertEqual(window.grow(taken: 1_000_000), .size(512 * 1024))
        XCTAssertNil(window.grow(taken: 1_000_000), "nothing new taken: unchanged")
    }

    func testAClientThatTookOneMiBGetsTheKernelsAutotuningBack() {
        var window = ReceiveWindow(limit: 4 << 20)
        XCTAssertEqual(window.grow(taken: (1 << 20) - 1), .size(512 * 1024))
        XCTAssertEqual(window.grow(taken: 1 << 20), .autotune)
        XCTAssertNil(window.size)
        XCTAssertNil(window.grow(taken: 64 << 20), "autotuned: no more system calls")
        var fast = ReceiveWindow(limit: 4 << 20)
        XCTAssertEqual(fast.grow(taken: 8 << 20), .autotune, "one step from the start")
    }

    func testItNeverGrowsPastItsLimitBeforeTheKernelTakesOver() {
        var window = ReceiveWindow(limit: 100_000)
        XCTAssertEqual(window.grow(taken: 900_000), .size(100_000), "at most the limit, even between doublings")
        XCTAssertNil(window.grow(taken: 1_000_000), "at the limit: no more system calls")
        XCTAssertEqual(window.grow(taken: 1 << 20), .autotune)
        XCTAssertEqual(ReceiveWindow(limit: 1000).limit, 16 * 1024, "the limit is never below the start")
    }

    func testAfterAClientFellBehindTheNextResponseStartsSmall() {
        var window = ReceiveWindow(limit: 4 << 20)
        XCTAssertNil(window.reset(), "already at the start")
        _ = window.grow(taken: 256 * 1024)
        XCTAssertEqual(window.reset(), .size(16 * 1024))
        XCTAssertEqual(window.size, 16 * 1024)
        XCTAssertNil(window.reset())
        _ = window.grow(taken: 2 << 20)
        XCTAssertEqual(window.reset(), .size(16 * 1024), "an autotuned window is fixed small again")
        XCTAssertEqual(window.grow(taken: 32 * 1024), .size(32 * 1024))
    }

    func testTheSystemLimitIsWhatTheKernelGrantsAtMostFourMiB() {
        XCTAssertGreaterThanOrEqual(ReceiveWindow.systemLimit, 4096)
        XCTAssertLessThanOrEqual(ReceiveWindow.systemLimit, 4 << 20)
    }

    func testLoopbackAddressesAreRecognizedInBothFamilies() throws {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            XCTAssertTrue(try SocketAddress(host: host, port: 80).isLoopback, host)
        }
        for host in ["10.0.0.1", "128.0.0.1", "::2", "::", "::ffff:10.0.0.1", "fe80::1", "0.0.0.0"] {
            XCTAssertFalse(try SocketAddress(host: host, port: 80).isLoopback, host)
        }
    }
}
