@testable import Proxy
import XCTest

/// When an HTTP/2 upstream connection is probed for life, and when its silence means it is dead.
final class LivenessProbeTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testAGivenUpStreamProbesAndSilenceUntilTheDeadlineMeansDead() {
        var probe = LivenessProbe()
        XCTAssertEqual(probe.streamAbandoned(now: 10 * second), .probe)
        XCTAssertTrue(probe.probing)
        XCTAssertEqual(probe.streamAbandoned(now: 11 * second), .none, "one probe at a time")
        XCTAssertTrue(probe.deadlinePassed(), "nothing came: dead")
        XCTAssertFalse(probe.probing)
    }

    func testAnythingReadBeforeTheDeadlineMeansAlive() {
        var probe = LivenessProbe()
        XCTAssertEqual(probe.streamAbandoned(now: 10 * second), .probe)
        probe.heardFromPeer()
        XCTAssertFalse(probe.deadlinePassed(), "a read came: alive")
        // Reads before a probe say nothing of the silence after it.
        probe.heardFromPeer()
        XCTAssertEqual(probe.streamAbandoned(now: 10 * second + LivenessProbe.interval), .probe)
        XCTAssertTrue(probe.deadlinePassed())
    }

    func testProbesAreAtLeastTheIntervalApartSoGrpcGoCountsNoStrikeToAGoAway() {
        var probe = LivenessProbe()
        let start = 1_000 * second
        XCTAssertEqual(probe.streamAbandoned(now: start), .probe)
        probe.heardFromPeer()
        XCTAssertFalse(probe.deadlinePassed())
        XCTAssertEqual(probe.streamAbandoned(now: start + 60 * second), .none, "a minute later: too soon")
        XCTAssertEqual(probe.streamAbandoned(now: start + LivenessProbe.interval - 1), .none)
        XCTAssertEqual(probe.streamAbandoned(now: start + LivenessProbe.interval), .probe)
        // Two probes at most in grpc-go's five minutes.
        XCTAssertGreaterThanOrEqual(LivenessProbe.interval, 150 * second)
    }

    func testADeadlineWithoutAProbeChangesNothing() {
        var probe = LivenessProbe()
        XCTAssertFalse(probe.deadlinePassed(), "no probe: not dead")
        XCTAssertEqual(probe.streamAbandoned(now: 0), .probe, "the first probe may come at the clock's start")
    }
}
