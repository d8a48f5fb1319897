@testable import Proxy
import XCTest

/// The budgets of an app's HTTP/2 connection, without sockets: what is refused each time, what
/// only past a rate, and when the app is told to calm down.
final class HTTP2AbuseGuardTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testEarlyResetsAreToleratedUpToTheBurstThenTheConnectionIsCalmed() {
        var guardian = HTTP2AbuseGuard()
        // Rapid Reset: thousands at once. The first 200 pass uncounted (apps cancel calls).
        for index in 0..<200 {
            XCTAssertEqual(guardian.record(.rapidReset, now: 0), .pass, "reset \(index)")
        }
        XCTAssertEqual(guardian.record(.rapidReset, now: 0), .calm)
        XCTAssertTrue(guardian.calmed)
        // Told once; later ones are not refusals by themselves.
        XCTAssertEqual(guardian.record(.rapidReset, now: 0), .pass)
    }

    func testTheBudgetRefillsSoACancellingClientNeverRunsOut() {
        var guardian = HTTP2AbuseGuard()
        // 50 early resets a second for a minute (half the refill rate): never calmed.
        for tick in 0..<3000 {
            XCTAssertEqual(guardian.record(.rapidReset, now: UInt64(tick) * second / 50), .pass, "at \(tick)")
        }
        XCTAssertFalse(guardian.calmed)
    }

    func testRefusalsAreCountedEachTimeAndOnlyTheFirstIsLogged() {
        var guardian = HTTP2AbuseGuard()
        XCTAssertEqual(guardian.record(.headerList, now: 0), .countAndLog)
        XCTAssertEqual(guardian.record(.provokedReset, now: 0), .count)
        XCTAssertEqual(guardian.record(.headerList, now: 0), .count)
    }

    func testMalformedStreamsHaveAHundredForTheConnectionsLife() {
        var guardian = HTTP2AbuseGuard()
        for index in 0..<100 {
            XCTAssertNotEqual(guardian.record(.malformed, now: UInt64(index) * 60 * second), .calm, "stream \(index)")
        }
        // An hour later, no refill: the 101st calms.
        XCTAssertEqual(guardian.record(.malformed, now: 3600 * second), .calm)
    }

    func testProvokedResetsCalmAfterTheirBurst() {
        var guardian = HTTP2AbuseGuard()
        var actions: [HTTP2AbuseGuard.Action] = []
        for _ in 0..<101 { actions.append(guardian.record(.provokedReset, now: 5 * second)) }
        XCTAssertEqual(actions.first, .countAndLog)
        XCTAssertEqual(actions.dropFirst().dropLast().filter { $0 != .count }, [])
        XCTAssertEqual(actions.last, .calm)
        // Still counted after (each is a stream this side reset), never calmed twice.
        XCTAssertEqual(guardian.record(.provokedReset, now: 5 * second), .count)
    }

    func testFatalRefusalsHaveNoBudgetAndNeverCalm() {
        var guardian = HTTP2AbuseGuard()
        XCTAssertEqual(guardian.record(.continuationFlood, now: 0), .countAndLog)
        XCTAssertEqual(guardian.record(.outboundFlood, now: 0), .count)
        XCTAssertFalse(guardian.calmed)
    }

    func testPingsAreFreeUpToTheirRate() {
        var guardian = HTTP2AbuseGuard()
        // gRPC's probes: ten a second for ten minutes.
        for tick in 0..<6000 {
            XCTAssertEqual(guardian.record(.controlFrames, now: UInt64(tick) * second / 10), .pass)
        }
        // A flood: a thousand at once are taken, the next calms.
        let now = 700 * second
        for _ in 0..<999 { _ = guardian.record(.controlFrames, now: now) }
        XCTAssertEqual(guardian.record(.controlFrames, now: now), .pass)
        XCTAssertEqual(guardian.record(.controlFrames, now: now), .calm)
    }

    func testEachBudgetIsItsOwn() {
        var guardian = HTTP2AbuseGuard()
        for _ in 0..<200 { _ = guardian.record(.rapidReset, now: 0) }
        for _ in 0..<100 { _ = guardian.record(.emptyFrames, now: 0) }
        XCTAssertFalse(guardian.calmed, "neither budget is spent")
        XCTAssertEqual(guardian.record(.emptyFrames, now: 0), .calm)
    }
}
