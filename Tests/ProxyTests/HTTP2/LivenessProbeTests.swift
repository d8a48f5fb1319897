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
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .dead, "nothing came")
        XCTAssertFalse(probe.probing)
    }

    func testAnythingReadBeforeTheDeadlineMeansAlive() {
        var probe = LivenessProbe()
        XCTAssertEqual(probe.streamAbandoned(now: 10 * second), .probe)
        probe.heardFromPeer()
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .alive, "a read came")
        // Reads before a probe say nothing of the silence after it.
        probe.heardFromPeer()
        XCTAssertEqual(probe.streamAbandoned(now: 10 * second + LivenessProbe.interval), .probe)
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .dead)
    }

    func testOutputStillWaitingGetsTheDeadlineOnceMore() {
        // The PING may not have left (an upload fills the socket): one more period, then the verdict.
        var probe = LivenessProbe()
        XCTAssertEqual(probe.streamAbandoned(now: 0), .probe)
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: true), .waitAgain)
        XCTAssertTrue(probe.probing)
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: true), .dead, "only once")
        // A later probe gets its own extension, and a read within it means alive.
        XCTAssertEqual(probe.streamAbandoned(now: LivenessProbe.interval), .probe)
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: true), .waitAgain)
        probe.heardFromPeer()
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: true), .alive)
    }

    func testProbesWithNoResponseBetweenAreMoreThanFiveMinutesApartAsGrpcGoRequires() {
        // grpc-go's server strikes a PING within five minutes of the last one when it wrote no
        // HEADERS or DATA between; the third strike ends the connection.
        XCTAssertGreaterThan(LivenessProbe.interval, 300 * second)
        var probe = LivenessProbe()
        let start = 1_000 * second
        XCTAssertEqual(probe.streamAbandoned(now: start), .probe)
        probe.heardFromPeer()
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .alive)
        XCTAssertEqual(probe.streamAbandoned(now: start + 60 * second), .none, "a minute later: too soon")
        XCTAssertEqual(probe.streamAbandoned(now: start + LivenessProbe.interval - 1), .none)
        XCTAssertEqual(probe.streamAbandoned(now: start + LivenessProbe.interval), .probe)
    }

    func testAResponseSinceTheLastProbeAllowsTheNextAtOnce() {
        // Response frames reset grpc-go's count: a probe after them is never a strike.
        var probe = LivenessProbe()
        XCTAssertEqual(probe.streamAbandoned(now: 0), .probe)
        probe.heardFromPeer()
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .alive)
        probe.messageCame()
        XCTAssertEqual(probe.streamAbandoned(now: 5 * second), .probe)
        XCTAssertEqual(probe.streamAbandoned(now: 6 * second), .none, "one at a time")
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: false), .dead)
        XCTAssertEqual(probe.streamAbandoned(now: 7 * second), .none, "no response since the last probe")
    }

    func testADeadlineWithoutAProbeChangesNothing() {
        var probe = LivenessProbe()
        XCTAssertEqual(probe.deadlinePassed(outputWaiting: true), .alive, "no probe: not dead")
        XCTAssertEqual(probe.streamAbandoned(now: 0), .probe, "the first probe may come at the clock's start")
    }
}
