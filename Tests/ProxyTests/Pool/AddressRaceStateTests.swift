import EventLoop
import Glibc
import XCTest
@testable import Proxy

/// RFC 8305 §5 connection racing (``AddressRaceState``, which ``AddressRacer`` performs over
/// sockets), without sockets or timers: which attempt starts when, which are closed, and what
/// the owner hears. (One race over real sockets, a blackholed address then a live one:
/// ``SocketEdgeTests``.)
final class AddressRaceStateTests: XCTestCase {
    typealias State = AddressRaceState

    /// A race over `count` addresses, started: the first attempt is under way.
    private func racing(_ count: Int, file: StaticString = #filePath, line: UInt = #line) -> State {
        var state = State(addressCount: count)
        XCTAssertEqual(state.handle(.start), count > 1 ? [.armDelay, .startAttempt(index: 0)] : [.startAttempt(index: 0)],
                       file: file, line: line)
        return state
    }

    private let certificate = ConnectionEnd.tlsCertificate(message: "unable to get local issuer certificate")

    // MARK: - start

    func testStartTriesTheFirstAddressAndArmsTheDelayOnlyWhenAnotherIsLeft() {
        var three = State(addressCount: 3)
        XCTAssertEqual(three.handle(.start), [.armDelay, .startAttempt(index: 0)])
        XCTAssertEqual(three.phase, .racing)
        XCTAssertEqual(three.inFlight, [0])
        var one = State(addressCount: 1)
        XCTAssertEqual(one.handle(.start), [.startAttempt(index: 0)], "no delay when no address is left to start")
        XCTAssertEqual(three.handle(.start), [], "a second start starts nothing")
        XCTAssertEqual(three.inFlight, [0])
    }

    func testNoAddressAtAllFailsAsRefusedAtOnce() {
        var state = State(addressCount: 0)
        XCTAssertEqual(state.handle(.start), [.closeAttempts(except: nil), .complete(.failed(.refused))])
        XCTAssertEqual(state.phase, .over)
    }

    // MARK: - the attempt delay

    /// The first address never answers (blackholed): when the delay elapses the next address is
    /// tried while the first is still under way, and when the second connects it wins and the
    /// first is closed. The first address costs one attempt delay, not the connect timeout.
    func testABlackholedFirstAddressDoesNotHoldUpTheNextOne() {
        var state = racing(2)
        XCTAssertEqual(state.handle(.delayElapsed), [.startAttempt(index: 1)], "the next address, with the first still under way")
        XCTAssertEqual(state.inFlight, [0, 1])
        XCTAssertEqual(state.handle(.attemptConnected(index: 1)),
                       [.closeAttempts(except: 1), .complete(.connected(index: 1))],
                       "the second address wins; the blackholed attempt is closed")
        XCTAssertEqual(state.inFlight, [1], "only the winner is left")
        XCTAssertEqual(state.handle(.attemptConnected(index: 0)), [], "the closed loser cannot win afterwards")
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [])
    }

    /// Each elapsed delay starts one more address; the delay is armed again while another is left.
    func testEachElapsedDelayStartsOneMoreAddress() {
        var state = racing(4)
        XCTAssertEqual(state.handle(.delayElapsed), [.armDelay, .startAttempt(index: 1)])
        XCTAssertEqual(state.handle(.delayElapsed), [.armDelay, .startAttempt(index: 2)])
        XCTAssertEqual(state.handle(.delayElapsed), [.startAttempt(index: 3)])
        XCTAssertEqual(state.inFlight, [0, 1, 2, 3])
        XCTAssertEqual(state.handle(.delayElapsed), [], "nothing left to start")
        XCTAssertEqual(state.handle(.attemptConnected(index: 2)), [.closeAttempts(except: 2), .complete(.connected(index: 2))],
                       "the first to connect wins, whatever its place")
    }

    /// The first attempt connects before the delay: nothing else is ever started.
    func testAFirstAddressThatConnectsInTimeIsTheOnlyAttempt() {
        var state = racing(3)
        XCTAssertEqual(state.handle(.attemptConnected(index: 0)), [.closeAttempts(except: 0), .complete(.connected(index: 0))])
        XCTAssertEqual(state.handle(.delayElapsed), [], "a delay that elapses after the race starts nothing")
        XCTAssertEqual(state.next, 1)
    }

    // MARK: - failures

    /// A refused attempt starts the next address at once, without waiting for the delay (which
    /// is armed again from now for the one after).
    func testAFailedAttemptStartsTheNextOneAtOnce() {
        var state = racing(3)
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [.armDelay, .startAttempt(index: 1)])
        XCTAssertEqual(state.inFlight, [1])
        XCTAssertEqual(state.handle(.attemptFailed(index: 1, end: .socketError(errno: ENETUNREACH))), [.startAttempt(index: 2)])
        XCTAssertEqual(state.handle(.attemptConnected(index: 2)), [.closeAttempts(except: 2), .complete(.connected(index: 2))])
    }

    func testWhenEveryAddressFailsTheLastFailureIsReported() {
        var state = racing(2)
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [.startAttempt(index: 1)])
        XCTAssertEqual(state.handle(.attemptFailed(index: 1, end: .socketError(errno: EHOSTUNREACH))),
                       [.closeAttempts(except: nil), .complete(.failed(.socketError(errno: EHOSTUNREACH)))])
        XCTAssertEqual(state.phase, .over)
    }

    /// With several attempts under way and nothing left to start, a failure waits for the
    /// others; the race fails with the failure that came last, whichever address it was.
    func testTheRaceWaitsForEveryAttemptInFlightAndReportsTheLastFailure() {
        var state = racing(3)
        _ = state.handle(.delayElapsed)
        _ = state.handle(.delayElapsed)
        XCTAssertEqual(state.handle(.attemptFailed(index: 2, end: .refused)), [], "two attempts are still under way")
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .socketError(errno: ENETUNREACH))), [])
        XCTAssertEqual(state.handle(.attemptFailed(index: 1, end: .socketError(errno: ECONNRESET))),
                       [.closeAttempts(except: nil), .complete(.failed(.socketError(errno: ECONNRESET)))])
    }

    /// One attempt failed, another is under way and connects: it wins.
    func testAnAttemptInFlightStillWinsAfterAnotherFailed() {
        var state = racing(2)
        _ = state.handle(.delayElapsed)
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [])
        XCTAssertEqual(state.handle(.attemptConnected(index: 1)), [.closeAttempts(except: 1), .complete(.connected(index: 1))])
    }

    /// A certificate that does not verify, a TLS protocol failure or an attempt's timeout ends
    /// the race with that failure: the name's other addresses are not tried, and attempts
    /// under way are closed.
    func testTLSFailuresAndTimeoutsAreNotRetriedOnAnotherAddress() {
        for end in [certificate, .tlsProtocol(message: "wrong version number"), .timeout] {
            var state = racing(3)
            XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: end)), [.closeAttempts(except: nil), .complete(.failed(end))],
                           "\(end)")
            XCTAssertEqual(state.next, 1, "\(end): no other address was started")
            var twoUnderWay = racing(3)
            _ = twoUnderWay.handle(.delayElapsed)
            XCTAssertEqual(twoUnderWay.handle(.attemptFailed(index: 1, end: end)),
                           [.closeAttempts(except: nil), .complete(.failed(end))], "\(end): the other attempt is closed")
            XCTAssertEqual(twoUnderWay.inFlight, [])
        }
    }

    /// An attempt that cannot even start (no socket) fails like a refused one: the next
    /// address is started at once, and with none left the race fails with that failure.
    func testAnAttemptThatCannotStartGoesOnWithTheNextAddress() {
        var state = racing(2)
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .socketError(errno: 0))), [.startAttempt(index: 1)])
        XCTAssertEqual(state.handle(.attemptFailed(index: 1, end: .socketError(errno: 0))),
                       [.closeAttempts(except: nil), .complete(.failed(.socketError(errno: 0)))])
    }

    // MARK: - cancel

    /// The owner's connect timeout: every attempt under way is closed and the owner hears
    /// nothing more, whatever the sockets and the timer report afterwards.
    func testCancelClosesEveryAttemptAndNothingCompletesAfterwards() {
        var state = racing(3)
        _ = state.handle(.delayElapsed)
        XCTAssertEqual(state.handle(.cancel), [.closeAttempts(except: nil)])
        XCTAssertEqual(state.phase, .over)
        XCTAssertEqual(state.inFlight, [])
        for event in [State.Event.delayElapsed, .attemptConnected(index: 1), .attemptFailed(index: 0, end: .refused), .start, .cancel] {
            XCTAssertEqual(state.handle(event), [], "\(event) after cancel")
        }
    }

    func testCancelBeforeStartMeansTheRaceNeverStarts() {
        var state = State(addressCount: 2)
        XCTAssertEqual(state.handle(.cancel), [])
        XCTAssertEqual(state.handle(.start), [], "no attempt after cancel")
    }

    // MARK: - every event in every state

    func testEveryEventBeforeStartOtherThanStartAndCancelIsIgnored() {
        var state = State(addressCount: 2)
        for event in [State.Event.delayElapsed, .attemptConnected(index: 0), .attemptFailed(index: 0, end: .refused)] {
            XCTAssertEqual(state.handle(event), [], "\(event) before start")
            XCTAssertEqual(state.phase, .idle)
        }
        XCTAssertEqual(state.handle(.start), [.armDelay, .startAttempt(index: 0)])
    }

    func testEventsForAttemptsNotInFlightAreIgnored() {
        var state = racing(3)
        XCTAssertEqual(state.handle(.attemptConnected(index: 1)), [], "never started")
        XCTAssertEqual(state.handle(.attemptFailed(index: 2, end: .refused)), [], "never started")
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [.armDelay, .startAttempt(index: 1)])
        XCTAssertEqual(state.handle(.attemptFailed(index: 0, end: .refused)), [], "already failed")
        XCTAssertEqual(state.handle(.attemptConnected(index: 0)), [], "already failed")
        XCTAssertEqual(state.inFlight, [1])
    }

    func testEveryEventAfterCompletionIsIgnored() {
        var won = racing(2)
        _ = won.handle(.attemptConnected(index: 0))
        var lost = racing(1)
        _ = lost.handle(.attemptFailed(index: 0, end: .refused))
        for var state in [won, lost] {
            for event in [State.Event.start, .delayElapsed, .attemptConnected(index: 0), .attemptConnected(index: 1),
                          .attemptFailed(index: 0, end: .refused), .attemptFailed(index: 1, end: .refused), .cancel] {
                XCTAssertEqual(state.handle(event), [], "\(event) after the race")
            }
        }
    }

    /// What the performer would have: the attempts started and still open, and what the owner heard.
    private struct Performer {
        var started = 0
        var open = Set<Int>()
        var completed = false
        var cancelled = false
    }

    /// Every sequence of up to five events over up to three addresses: each address is started
    /// at most once and in order; a start comes last in its list (so a performer may report an
    /// attempt that cannot start from inside it) and a delay is armed just before it only while
    /// another address is left; the race completes at most once, never after cancel, last, after
    /// closing every attempt but the winner, which was in flight; the attempts the state holds
    /// in flight are those started and neither failed nor closed; a race in progress always has
    /// one.
    func testInvariantsHoldOverEverySequenceOfEvents() {
        var violations: [String] = []
        var sequences = 0
        for count in 0...3 {
            var events: [State.Event] = [.start, .delayElapsed, .cancel]
            for index in 0..<max(count, 1) {
                events.append(.attemptConnected(index: index))
                events.append(.attemptFailed(index: index, end: .refused))
                events.append(.attemptFailed(index: index, end: certificate))
            }
            func explore(_ state: State, _ performer: Performer, _ path: [State.Event]) {
                guard path.count < 5, violations.count < 10 else { return }
                for event in events {
                    var state = state
                    var performer = performer
                    let path = path + [event]
                    sequences += 1
                    for violation in apply(event, to: &state, &performer, count: count) {
                        violations.append("\(count) addresses, \(path): \(violation)")
                    }
                    explore(state, performer, path)
                }
            }
            explore(State(addressCount: count), Performer(), [])
        }
        XCTAssertGreaterThan(sequences, 100_000)
        XCTAssertEqual(violations, [])
    }

    /// Feeds `event`, performs the actions on `performer`'s model; what broke an invariant.
    private func apply(_ event: State.Event, to state: inout State, _ performer: inout Performer, count: Int) -> [String] {
        var violations: [String] = []
        let actions = state.handle(event)
        for (position, action) in actions.enumerated() {
            let last = position == actions.count - 1
            switch action {
            case .startAttempt(let index):
                if index != performer.started { violations.append("started \(index) after \(performer.started) starts") }
                if !last { violations.append("a start is not last in \(actions)") }
                performer.started += 1
                performer.open.insert(index)
            case .armDelay:
                if actions.count != 2 || position != 0 { violations.append("a delay not just before a start in \(actions)") }
                if performer.started + 1 >= count { violations.append("a delay armed with no address left") }
            case .closeAttempts(let kept):
                performer.open = performer.open.filter { $0 == kept }
            case .complete(let outcome):
                if performer.completed { violations.append("completed twice") }
                if performer.cancelled { violations.append("completed after cancel") }
                if !last { violations.append("completion is not last in \(actions)") }
                performer.completed = true
                switch outcome {
                case .connected(let index) where performer.open != [index]:
                    violations.append("winner \(index) with \(performer.open) open")
                case .failed where !performer.open.isEmpty:
                    violations.append("failed with \(performer.open) open")
                default: break
                }
            }
        }
        switch event {
        case .cancel where !performer.completed: performer.cancelled = true
        case .attemptFailed(let index, _): performer.open.remove(index)
        default: break
        }
        if state.phase == .racing {
            if Set(state.inFlight) != performer.open { violations.append("in flight \(state.inFlight), open \(performer.open)") }
            if state.inFlight.isEmpty { violations.append("racing with no attempt in flight") }
        }
        return violations
    }

    // MARK: - address order

    /// RFC 8305 §4: families alternate, starting with the family of the resolver's first answer,
    /// in the resolver's order within each family.
    func testAddressFamiliesAreInterleavedStartingWithTheFirstAnswer() throws {
        let v6a = try SocketAddress(host: "2001:db8::1", port: 443)
        let v6b = try SocketAddress(host: "2001:db8::2", port: 443)
        let v6c = try SocketAddress(host: "2001:db8::3", port: 443)
        let v4a = try SocketAddress(host: "192.0.2.1", port: 443)
        let v4b = try SocketAddress(host: "192.0.2.2", port: 443)
        let order = State.interleaved([v6a, v6b, v6c, v4a, v4b]).map(\.description)
        XCTAssertEqual(order, [v6a, v4a, v6b, v4b, v6c].map(\.description))
        let v4First = State.interleaved([v4a, v6a, v6b, v4b]).map(\.description)
        XCTAssertEqual(v4First, [v4a, v6a, v4b, v6b].map(\.description))
        XCTAssertEqual(State.interleaved([v4b, v4a]).map(\.description), [v4b, v4a].map(\.description))
        XCTAssertTrue(State.interleaved([]).isEmpty)
    }
}
