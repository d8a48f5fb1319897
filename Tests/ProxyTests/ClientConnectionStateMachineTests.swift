import Crypto
import EventLoop
import HTTP1
@testable import Proxy
import XCTest

/// The client connection's own machine, with no loop, no stream and no clock: every event in
/// every state it can happen in.
final class ClientConnectionStateMachineTests: XCTestCase {
    typealias Machine = ClientConnectionStateMachine

    private let origin = InterceptedOrigin(Authority(host: "api.test", port: 443))
    private static let server: TLSServerContext? = try? TLSServerContext(
        leaf: InterceptAuthority.generate(permittedNames: ["api.test"]).mintLeaf(for: "api.test"))

    private func tunnel(acceptsTLS: Bool = true) throws -> Machine.InterceptedTunnel {
        Machine.InterceptedTunnel(origin: origin, server: try XCTUnwrap(Self.server), acceptsTLS: acceptsTLS)
    }

    /// A machine driven into `state` through its events.
    private func machine(in state: Machine.State) throws -> Machine {
        var machine = Machine()
        switch state {
        case .handshaking:
            machine = Machine(intercepted: origin, handshaking: true)
        case .idle:
            _ = machine.start(draining: false, inputEmpty: true)
        case .readingHead:
            _ = machine.headIncomplete()
        case .busy:
            _ = machine.headComplete()
        case .answeringConnect(let tunnel):
            _ = machine.headComplete()
            _ = machine.connectIntercepted(tunnel)
        case .awaitingFirstByte(let tunnel):
            _ = machine.headComplete()
            _ = machine.connectIntercepted(tunnel)
            _ = machine.outputDrained()
        case .closed:
            machine.closed()
        }
        XCTAssertEqual(machine.state, state)
        return machine
    }

    private func allStates() throws -> [Machine.State] {
        [.handshaking, .idle, .readingHead, .busy, .answeringConnect(try tunnel()), .awaitingFirstByte(try tunnel()), .closed]
    }

    // MARK: - waiting for requests

    func testAConnectionWaitsIdleForItsFirstRequestOrItsHandshake() {
        var plain = Machine()
        XCTAssertEqual(plain.start(draining: false, inputEmpty: true), .armHeadTimer(.idle))
        XCTAssertEqual(plain.state, .idle)
        var tls = Machine(intercepted: origin, handshaking: true)
        XCTAssertEqual(tls.start(draining: false, inputEmpty: true), .armHeadTimer(.clientHeader),
                       "a handshake must complete as soon as a head would")
        XCTAssertEqual(tls.handshakeCompleted(draining: false, inputEmpty: true), .armHeadTimer(.idle))
        XCTAssertEqual(tls.state, .idle)
        var plaintextTunnel = Machine(intercepted: origin, handshaking: false)
        XCTAssertEqual(plaintextTunnel.start(draining: false, inputEmpty: true), .armHeadTimer(.idle),
                       "a plaintext tunnel has no handshake")
        var draining = Machine()
        XCTAssertEqual(draining.start(draining: true, inputEmpty: true), .close)
        XCTAssertEqual(draining.state, .closed)
    }

    func testAHeadGetsClientHeaderFromItsFirstByteThenTheExchangeHasTheConnection() throws {
        var machine = try self.machine(in: .idle)
        XCTAssertEqual(machine.headIncomplete(), .armHeadTimer(.clientHeader))
        XCTAssertEqual(machine.headIncomplete(), .none, "more bytes of the same head do not restart the clock")
        XCTAssertEqual(machine.headComplete(), .stopHeadTimer)
        XCTAssertEqual(machine.state, .busy)
        XCTAssertEqual(machine.headTimerFired(), .none, "a late expiry finds nothing to do")
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .armHeadTimer(.idle), "keep-alive")
        XCTAssertEqual(machine.headComplete(), .stopHeadTimer, "a pipelined head, whole at once")
        XCTAssertEqual(machine.requestEnded(draining: true, inputEmpty: false), .armHeadTimer(.idle),
                       "draining: a pipelined request already sent is still answered")
        _ = machine.headComplete()
        XCTAssertEqual(machine.requestEnded(draining: true, inputEmpty: true), .close)
        XCTAssertEqual(machine.state, .closed)
    }

    func testEachHeadTimerExpiry() throws {
        var idle = try machine(in: .idle)
        XCTAssertEqual(idle.headTimerFired(), .close)
        var reading = try machine(in: .readingHead)
        guard case .answer(let error) = reading.headTimerFired() else { return XCTFail("a partial head gets an answer") }
        XCTAssertEqual(error.status, 408)
        XCTAssertEqual(reading.state, .closed)
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.headTimerFired(),
                       .abort(interceptFailure: Machine.InterceptFailure(origin: origin, reason: .timeout)))
        for state in [Machine.State.busy, .answeringConnect(try tunnel()), .awaitingFirstByte(try tunnel()), .closed] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.headTimerFired(), .none, "\(state)")
            XCTAssertEqual(machine.state, state)
        }
    }

    func testADrainClosesOnlyAConnectionWithNothingToDo() throws {
        for state in try allStates() {
            var machine = try self.machine(in: state)
            let expected: Machine.Action = state == .idle ? .close : .none
            XCTAssertEqual(machine.drainBegan(inputEmpty: true), expected, "\(state)")
        }
        var pipelined = try machine(in: .idle)
        XCTAssertEqual(pipelined.drainBegan(inputEmpty: false), .none, "a request is already here")
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.drainBegan(inputEmpty: true), .none)
        XCTAssertEqual(handshaking.handshakeCompleted(draining: true, inputEmpty: true), .close,
                       "after its handshake, a connection of a draining process with nothing to read closes")
    }

    // MARK: - interception

    func testAnInterceptedCONNECTWaitsForItsAnswerThenForTheFirstByte() throws {
        let tunnel = try tunnel()
        var machine = try self.machine(in: .busy)
        XCTAssertEqual(machine.connectIntercepted(tunnel), .stopHeadTimer)
        XCTAssertEqual(machine.outputDrained(), .peekFirstByte)
        XCTAssertEqual(machine.outputDrained(), .none, "a second drain starts no second wait")
        XCTAssertEqual(machine.firstByte(0x16), .continueAsTLS(tunnel))
        XCTAssertEqual(machine.state, .closed, "this session is done: another one continues")
        XCTAssertEqual(machine.firstByte(0x47), .none)
    }

    func testTheFirstByteDecidesWhatTheTunnelCarries() throws {
        for (byte, acceptsTLS, expected) in [(UInt8(0x47), true, "plaintext"), (0x47, false, "plaintext"), (0x16, true, "tls"),
                                             (0x16, false, "refused")] {
            let tunnel = try tunnel(acceptsTLS: acceptsTLS)
            var machine = try self.machine(in: .awaitingFirstByte(tunnel))
            let action = machine.firstByte(byte)
            switch expected {
            case "plaintext": XCTAssertEqual(action, .continueAsPlaintext(tunnel))
            case "tls": XCTAssertEqual(action, .continueAsTLS(tunnel))
            default: XCTAssertEqual(action, .refuseTLS(tunnel), "TLS where the route sends plaintext upstream")
            }
        }
        var left = try machine(in: .awaitingFirstByte(try tunnel()))
        XCTAssertEqual(left.firstByte(nil), .abort(interceptFailure: Machine.InterceptFailure(origin: origin, reason: .endOfStream)),
                       "an app that leaves without a byte is counted like a refused handshake")
    }

    func testAClientThatEndsWhileATunnelIsSetUpIsDroppedAndCounted() throws {
        var answering = try machine(in: .answeringConnect(try tunnel()))
        XCTAssertEqual(answering.clientEnded(.endOfStream), .abort(interceptFailure: nil), "it never saw the 200")
        var waiting = try machine(in: .awaitingFirstByte(try tunnel()))
        XCTAssertEqual(waiting.clientEnded(.timeout), .abort(interceptFailure: Machine.InterceptFailure(origin: origin, reason: .timeout)))
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.clientEnded(.tlsProtocol(message: "unknown ca")),
                       .abort(interceptFailure: Machine.InterceptFailure(origin: origin, reason: .tlsProtocol(message: "unknown ca"))))
        for state in [Machine.State.idle, .readingHead, .busy] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.clientEnded(.endOfStream), .toExchange, "\(state): the exchange decides")
        }
        var closed = try machine(in: .closed)
        XCTAssertEqual(closed.clientEnded(.endOfStream), .none)
    }

    func testDrainsOutsideATunnelAreTheExchanges() throws {
        for state in [Machine.State.idle, .readingHead, .busy, .handshaking] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.outputDrained(), .toExchange, "\(state)")
        }
        var closed = try machine(in: .closed)
        XCTAssertEqual(closed.outputDrained(), .none)
    }

    /// Every event in every state where it does not apply changes nothing.
    func testEventsOutOfPlaceDoNothing() throws {
        for state in try allStates() {
            var machine = try self.machine(in: state)
            if state != .busy { XCTAssertEqual(machine.connectIntercepted(try tunnel()), .none, "\(state)") }
            if state != .handshaking { XCTAssertEqual(machine.handshakeCompleted(draining: false, inputEmpty: true), .none, "\(state)") }
            if ![Machine.State.idle, .readingHead, .busy].contains(state) {
                XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .none, "\(state)")
                XCTAssertEqual(machine.headComplete(), .none, "\(state)")
            }
            if state != .idle { XCTAssertEqual(machine.headIncomplete(), .none, "\(state)") }
            if case .awaitingFirstByte = state {} else { XCTAssertEqual(machine.firstByte(0x16), .none, "\(state)") }
            XCTAssertEqual(machine.state, state, "\(state) stays")
        }
    }
}
