import EventLoop
import XCTest

final class AcceptBackoffTests: XCTestCase {
    func testDoublesFromOneHundredMillisecondsToOneSecondAndResetsAfterSuccess() {
        var backoff = AcceptBackoff()
        let delays = (0..<6).map { _ in backoff.failed() }
        XCTAssertEqual(delays, [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                                .seconds(1), .seconds(1)])
        backoff.succeeded()
        XCTAssertEqual(backoff.failed(), .milliseconds(100))
    }
}
