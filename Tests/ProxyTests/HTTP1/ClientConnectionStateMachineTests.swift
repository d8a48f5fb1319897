import Crypto
import EventLoop
import HTTP1
@testable import Proxy
import XCTest

/// The client connection's machine, with no loop, no stream and no clock: every event in every
/// state it can happen in — waiting, pipelining, drain, refusals, local answers, interception
/// and each timer — and, for every other state, that the event changes nothing.
final class ClientConnectionStateMachineTests: XCTestCase {
    typealias Machine = ClientConnectionStateMachine

    private let origin = InterceptedOrigin(Authority(host: "api.test", port: 443))
    private static let server: TLSServerContext? = try? TLSServerContext(
        leaf: InterceptAuthority.generate(permittedNames: ["api.test"]).mintLeaf(for: "api.test"))
    private let notFound = ProxyError(status: 403, type: "destination_unknown", message: "no route")

    private func tunnel(acceptsTLS: Bool = true) throws -> Machine.InterceptedTunnel {
        Machine.InterceptedTunnel(origin: origin, server: try XCTUnwrap(Self.server), acceptsTLS: acceptsTLS)
    }

    private func request(keepAlive: Bool = true, bodyless: Bool = true, expectsContinue: Bool = false,
                         http11: Bool = true, credential: Exchange.CredentialUse = .none) -> Exchange.Request {
        Exchange.Request(idempotent: true, keepAlive: keepAlive, bodyless: bodyless, chunked: false,
                         expectsContinue: expectsContinue, credential: credential, http11: http11)
    }

    private var collecting: Machine.State { .answeringLocally(LocalAnswer(request: request())) }
    private func answering(clientEnded: Bool) -> Machine.State {
        .answeringLocally(LocalAnswer(request: request(), phase: .answering(clientEnded: clientEnded)))
    }

    /// A machine driven into `state` through its events (never by setting it).
    private func machine(in state: Machine.State) throws -> Machine {
        var machine = Machine()
        switch state {
        case .handshaking:
            machine = Machine(intercepted: origin, handshaking: true)
        case .idle:
            _ = machine.start(draining: false, inputEmpty: true)
        case .readingHead:
            _ = machine.headIncomplete()
        case .inRequest:
            _ = machine.headComplete()
        case .answeringLocally(let answer):
            _ = machine.headComplete()
            _ = machine.localRequestStarted(answer.request, bodyTooLarge: false)
            if case .answering(let clientEnded) = answer.phase {
                _ = machine.localBodyCollected(.complete)
                if clientEnded { _ = machine.clientEnded(.endOfStream) }
            }
        case .awaitingClientDrain:
            machine = try self.machine(in: answering(clientEnded: false))
            _ = machine.localAnswered(closeRequested: false)
            _ = machine.localAnswerWritten(backlogged: true)
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
        [.handshaking, .idle, .readingHead, .inRequest, collecting, answering(clientEnded: false), answering(clientEnded: true),
         .awaitingClientDrain, .answeringConnect(try tunnel()), .awaitingFirstByte(try tunnel()), .closed]
    }

    /// For every state but `applies`, `event` returns `.none` and leaves the state as it is.
    private func assertNothingOutside(_ applies: [Machine.State], _ name: String, line: UInt = #line,
                                      _ event: (inout Machine) -> Machine.Action) throws {
        for state in try allStates() where !applies.contains(state) {
            var machine = try self.machine(in: state)
            XCTAssertEqual(event(&machine), .none, "\(name) in \(state)", line: line)
            XCTAssertEqual(machine.state, state, "\(name) leaves \(state) as it is", line: line)
        }
    }

    // MARK: - waiting for requests, pipelining, drain

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
        var pending = Machine()
        XCTAssertEqual(pending.start(draining: true, inputEmpty: false), .armHeadTimer(.idle),
                       "a tunnel's first byte still waiting in the kernel is read while draining")
    }

    func testAHeadGetsClientHeaderFromItsFirstByteThenTheRequestHasTheConnection() throws {
        var machine = try self.machine(in: .idle)
        XCTAssertEqual(machine.headIncomplete(), .armHeadTimer(.clientHeader))
        XCTAssertEqual(machine.headIncomplete(), .none, "more bytes of the same head do not restart the clock")
        XCTAssertEqual(machine.headComplete(), .stopHeadTimer)
        XCTAssertEqual(machine.state, .inRequest)
        XCTAssertEqual(machine.headTimerFired(), .none, "a late expiry finds nothing to do")
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .armHeadTimer(.idle), "keep-alive")
        try assertNothingOutside([.idle], "headIncomplete") { $0.headIncomplete() }
        try assertNothingOutside([.idle, .readingHead], "headComplete") { $0.headComplete() }
    }

    func testAHeadGivenByAnHTTP2StreamIsAnsweredAtOnceWithoutAHeadTimer() throws {
        var stream = Machine()
        XCTAssertTrue(stream.headGiven(), "a new stream's session takes its head before any event")
        XCTAssertEqual(stream.state, .inRequest)
        XCTAssertEqual(stream.headTimerFired(), .none, "no head timer runs for it")
        for state in try allStates() where state != .idle {
            var machine = try self.machine(in: state)
            XCTAssertFalse(machine.headGiven(), "headGiven in \(state)")
            XCTAssertEqual(machine.state, state, "headGiven leaves \(state) as it is")
        }
    }

    func testPipelinedRequestsAreReadOneAfterTheOtherAndStillAnsweredWhileDraining() throws {
        var machine = try self.machine(in: .idle)
        XCTAssertEqual(machine.headComplete(), .stopHeadTimer, "a pipelined head, whole at once")
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: false), .armHeadTimer(.idle))
        XCTAssertEqual(machine.headComplete(), .stopHeadTimer, "the next one, from the same input")
        XCTAssertEqual(machine.requestEnded(draining: true, inputEmpty: false), .armHeadTimer(.idle),
                       "draining: a pipelined request already sent is still answered")
        _ = machine.headComplete()
        XCTAssertEqual(machine.requestEnded(draining: true, inputEmpty: true), .close, "then the connection closes")
        XCTAssertEqual(machine.state, .closed)
        try assertNothingOutside([.idle, .readingHead, .inRequest], "requestEnded") {
            $0.requestEnded(draining: false, inputEmpty: true)
        }
    }

    func testADrainClosesOnlyAConnectionWithNothingToDo() throws {
        for state in try allStates() {
            var machine = try self.machine(in: state)
            let expected: Machine.Action = state == .idle ? .close : .none
            XCTAssertEqual(machine.drainBegan(inputEmpty: true), expected, "\(state)")
            XCTAssertEqual(machine.state, state == .idle ? .closed : state, "\(state)")
        }
        var pipelined = try machine(in: .idle)
        XCTAssertEqual(pipelined.drainBegan(inputEmpty: false), .none, "a request is already here")
        XCTAssertEqual(pipelined.state, .idle)
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.handshakeCompleted(draining: true, inputEmpty: true), .close,
                       "after its handshake, a connection of a draining process with nothing to read closes")
        try assertNothingOutside([.handshaking], "handshakeCompleted") { $0.handshakeCompleted(draining: false, inputEmpty: true) }
    }

    // MARK: - each timer

    func testEachHeadTimerExpiry() throws {
        var idle = try machine(in: .idle)
        XCTAssertEqual(idle.headTimerFired(), .close, "keep-alive idle timeout")
        var reading = try machine(in: .readingHead)
        guard case .rejectHead(let error) = reading.headTimerFired() else { return XCTFail("a partial head gets an answer") }
        XCTAssertEqual(error.status, 408)
        XCTAssertEqual(reading.state, .closed)
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.headTimerFired(),
                       .abort(interceptFailure: Machine.InterceptFailure(origin: origin, reason: .timeout)))
        XCTAssertEqual(handshaking.state, .closed)
        try assertNothingOutside([.idle, .readingHead, .handshaking], "headTimerFired") { $0.headTimerFired() }
    }

    func testWhileAnsweringLocallyTheTimerIsTheRespondersAndOtherwiseTheExchanges() throws {
        var waiting = try machine(in: answering(clientEnded: false))
        XCTAssertEqual(waiting.timerFired(), .abort(interceptFailure: nil), "a responder that never answers")
        XCTAssertEqual(waiting.state, .closed)
        XCTAssertEqual(waiting.localAnswered(closeRequested: false), .none, "a late answer is ignored")
        var halfClosed = try machine(in: answering(clientEnded: true))
        XCTAssertEqual(halfClosed.timerFired(), .abort(interceptFailure: nil))
        for state in [Machine.State.handshaking, .idle, .readingHead, .inRequest, .awaitingClientDrain,
                      .answeringConnect(try tunnel()), .awaitingFirstByte(try tunnel())] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.timerFired(), .toExchange, "\(state): the exchange knows what it armed")
            XCTAssertEqual(machine.state, state)
        }
        for state in [collecting, .closed] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.timerFired(), .none, "\(state)")
            XCTAssertEqual(machine.state, state)
        }
    }

    func testTheExchangeTimersAreDecidedByTheExchangeTheConnectionHolds() throws {
        var machine = try self.machine(in: .inRequest)
        XCTAssertEqual(machine.startExchange(request(credential: .fixed)), .lookUpToken)
        XCTAssertEqual(machine.exchangeEvent { $0.tokenResolved(available: true) }, .stageBody(copy: true))
        XCTAssertEqual(machine.exchangeEvent { $0.bodyStaged(.complete, stagedBytes: 0, copy: nil) },
                       .acquireUpstream(checkStale: false, pauseClient: false))
        XCTAssertEqual(machine.exchangeEvent { $0.upstreamQueued() }, .armQueueTimer)
        XCTAssertEqual(machine.exchange.timer, .queue)
        XCTAssertEqual(machine.exchangeEvent { $0.timerFired() }, .fail(.connectionLimit, close: true, retryAfter: 1))
        XCTAssertNil(machine.exchange.timer)
        XCTAssertEqual(machine.exchange.state, .closed)
        var idle = try self.machine(in: .idle)
        XCTAssertEqual(idle.startExchange(request()), .none, "an exchange starts only for a head read")
    }

    // MARK: - refusals before an exchange

    func testARefusalKeepsTheConnectionOnlyForABodylessKeepAliveRequest() throws {
        for (label, request, connect, keep) in [("bodyless keep-alive", request(), false, true),
                                                ("a body may follow", request(bodyless: false), false, false),
                                                ("Connection: close", request(keepAlive: false), false, false),
                                                ("a CONNECT: the bytes after it are not HTTP", request(), true, false)] {
            var machine = try self.machine(in: .inRequest)
            XCTAssertEqual(machine.refused(notFound, request: request, connect: connect), .answer(notFound, keepClient: keep), label)
            XCTAssertEqual(machine.state, keep ? .inRequest : .closed, label)
            if keep {
                XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .armHeadTimer(.idle),
                               "\(label): the next request may come once the answer is written")
            }
        }
        var unparsed = try machine(in: .inRequest)
        XCTAssertEqual(unparsed.refused(notFound, request: nil), .answer(notFound, keepClient: false))
        try assertNothingOutside([.idle, .readingHead, .inRequest], "refused") { $0.refused(self.notFound, request: self.request()) }
    }

    func testAMalformedHeadIsRejectedAndTheConnectionCloses() throws {
        for state in [Machine.State.idle, .readingHead] {
            var machine = try self.machine(in: state)
            XCTAssertEqual(machine.headMalformed(notFound), .rejectHead(notFound), "\(state)")
            XCTAssertEqual(machine.state, .closed)
        }
        try assertNothingOutside([.idle, .readingHead], "headMalformed") { $0.headMalformed(self.notFound) }
    }

    // MARK: - local answers

    func testALocalRequestIsCollectedAnsweredWrittenThenTheNextOneIsRead() throws {
        var machine = try self.machine(in: .inRequest)
        XCTAssertEqual(machine.localRequestStarted(request(bodyless: false), bodyTooLarge: false),
                       .collectLocalBody(sendContinue: false))
        XCTAssertEqual(machine.localBodyCollected(.needMore), .none)
        XCTAssertEqual(machine.clientReadable(), .collectLocalBody(sendContinue: false), "more body bytes are collected")
        XCTAssertEqual(machine.localBodyCollected(.complete), .answerLocally)
        XCTAssertEqual(machine.clientReadable(), .none, "pipelined bytes wait while the responder works")
        XCTAssertEqual(machine.outputDrained(), .none)
        XCTAssertEqual(machine.localAnswered(closeRequested: false), .respondLocally(keepClient: true))
        XCTAssertEqual(machine.localAnswered(closeRequested: false), .none, "one answer per request")
        XCTAssertEqual(machine.localAnswerWritten(backlogged: false), .resumeRequests)
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .armHeadTimer(.idle))
        try assertNothingOutside([.inRequest], "localRequestStarted") { $0.localRequestStarted(self.request(), bodyTooLarge: false) }
        try assertNothingOutside([collecting], "localBodyCollected") { $0.localBodyCollected(.complete) }
        try assertNothingOutside([answering(clientEnded: false), answering(clientEnded: true)], "localAnswered") {
            $0.localAnswered(closeRequested: false)
        }
        try assertNothingOutside([.inRequest], "localAnswerWritten") { $0.localAnswerWritten(backlogged: true) }
    }

    func testContinueIsSentOnlyWhereAClientWaitsForIt() throws {
        var machine = try self.machine(in: .inRequest)
        XCTAssertEqual(machine.localRequestStarted(request(bodyless: false, expectsContinue: true), bodyTooLarge: false),
                       .collectLocalBody(sendContinue: true))
        XCTAssertEqual(machine.clientReadable(), .collectLocalBody(sendContinue: false), "once per request")
        for (label, request) in [("HTTP/1.0", request(bodyless: false, expectsContinue: true, http11: false)),
                                 ("no body", request(bodyless: true, expectsContinue: true))] {
            var other = try self.machine(in: .inRequest)
            XCTAssertEqual(other.localRequestStarted(request, bodyTooLarge: false), .collectLocalBody(sendContinue: false), label)
        }
    }

    func testATooLargeOrMalformedOrStalledLocalBodyIsAnErrorAndAClose() throws {
        var declared = try machine(in: .inRequest)
        XCTAssertEqual(declared.localRequestStarted(request(bodyless: false, expectsContinue: true), bodyTooLarge: true),
                       .failLocally(.bodyTooLarge), "refused before any 100 Continue")
        XCTAssertEqual(declared.state, .closed)
        for (progress, failure) in [(LocalAnswer.BodyProgress.tooLarge, ExchangeFailure.bodyTooLarge), (.malformed, .malformedBody)] {
            var machine = try self.machine(in: collecting)
            XCTAssertEqual(machine.localBodyCollected(progress), .failLocally(failure))
            XCTAssertEqual(machine.state, .closed)
        }
        var stalled = try machine(in: collecting)
        XCTAssertEqual(stalled.clientEnded(.timeout), .failLocally(.bodyIdleTimeout), "no body byte for bodyIdle: 408")
        var left = try machine(in: collecting)
        XCTAssertEqual(left.clientEnded(.endOfStream), .abort(interceptFailure: nil), "a body cut short is never answered")
    }

    func testAHalfClosedClientStillGetsItsLocalAnswerThenTheConnectionCloses() throws {
        var machine = try self.machine(in: answering(clientEnded: false))
        XCTAssertEqual(machine.clientEnded(.endOfStream), .none)
        XCTAssertEqual(machine.state, answering(clientEnded: true))
        XCTAssertEqual(machine.localAnswered(closeRequested: false), .respondLocally(keepClient: false))
        XCTAssertEqual(machine.state, .closed)
        var reset = try self.machine(in: answering(clientEnded: false))
        XCTAssertEqual(reset.clientEnded(.socketError(errno: 104)), .abort(interceptFailure: nil), "a client error while answering")
        XCTAssertEqual(reset.localAnswered(closeRequested: false), .none, "and the answer is ignored")
        var endedTwice = try self.machine(in: answering(clientEnded: true))
        XCTAssertEqual(endedTwice.clientEnded(.timeout), .abort(interceptFailure: nil))
    }

    func testKeepAliveAfterALocalAnswerNeedsTheClientAndTheResponder() throws {
        var closing = try machine(in: .inRequest)
        _ = closing.localRequestStarted(request(keepAlive: false), bodyTooLarge: false)
        _ = closing.localBodyCollected(.complete)
        XCTAssertEqual(closing.localAnswered(closeRequested: false), .respondLocally(keepClient: false))
        var responderCloses = try machine(in: answering(clientEnded: false))
        XCTAssertEqual(responderCloses.localAnswered(closeRequested: true), .respondLocally(keepClient: false))
    }

    func testLocalAnswersPilingUpUnreadPauseTheClientUntilItCatchesUp() throws {
        var machine = try self.machine(in: answering(clientEnded: false))
        _ = machine.localAnswered(closeRequested: false)
        XCTAssertEqual(machine.localAnswerWritten(backlogged: true), .pauseClient)
        XCTAssertEqual(machine.clientReadable(), .none, "no request is read meanwhile")
        XCTAssertEqual(machine.drainBegan(inputEmpty: true), .none, "its answers are still going out")
        XCTAssertEqual(machine.outputDrained(), .resumeRequests)
        XCTAssertEqual(machine.state, .inRequest)
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: false), .armHeadTimer(.idle))
        var left = try self.machine(in: .awaitingClientDrain)
        XCTAssertEqual(left.clientEnded(.endOfStream), .abort(interceptFailure: nil))
    }

    // MARK: - interception

    func testAnInterceptedCONNECTWaitsForItsAnswerThenForTheFirstByte() throws {
        let tunnel = try tunnel()
        var machine = try self.machine(in: .inRequest)
        XCTAssertEqual(machine.connectIntercepted(tunnel), .stopHeadTimer)
        XCTAssertEqual(machine.clientReadable(), .none, "nothing is read before the 200 left")
        XCTAssertEqual(machine.outputDrained(), .peekFirstByte)
        XCTAssertEqual(machine.outputDrained(), .none, "a second drain starts no second wait")
        XCTAssertEqual(machine.clientReadable(), .none, "the first byte is peeked, not read")
        XCTAssertEqual(machine.firstByte(0x16), .continueAsTLS(tunnel))
        XCTAssertEqual(machine.state, .closed, "this session is done: another one continues")
        let other = try self.tunnel(acceptsTLS: false)
        try assertNothingOutside([.inRequest], "connectIntercepted") { $0.connectIntercepted(other) }
        try assertNothingOutside([.awaitingFirstByte(tunnel)], "firstByte") { $0.firstByte(0x16) }
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
        var closed = try machine(in: .closed)
        XCTAssertEqual(closed.clientEnded(.endOfStream), .none)
    }

    func testTheTunnelAllowedThroughEndsThisSession() throws {
        var machine = try self.machine(in: .inRequest)
        machine.tunnelStarted()
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.requestEnded(draining: false, inputEmpty: true), .none)
    }

    // MARK: - the client's stream, outside these states: the exchange's

    func testClientEventsOfARequestOrBetweenRequestsAreTheExchanges() throws {
        for state in [Machine.State.idle, .readingHead, .inRequest] {
            var ended = try self.machine(in: state)
            XCTAssertEqual(ended.clientEnded(.endOfStream), .toExchange, "\(state): the exchange decides")
            var drained = try self.machine(in: state)
            XCTAssertEqual(drained.outputDrained(), .toExchange, "\(state)")
            XCTAssertEqual(drained.clientReadable(), .toExchange, "\(state)")
            XCTAssertEqual(drained.state, state)
        }
        var handshaking = try machine(in: .handshaking)
        XCTAssertEqual(handshaking.outputDrained(), .toExchange, "the handshake's own bytes")
        var closed = try machine(in: .closed)
        XCTAssertEqual(closed.outputDrained(), .none)
        XCTAssertEqual(closed.clientReadable(), .none)
    }

    func testClosingClosesTheExchangeToo() throws {
        var machine = try self.machine(in: .inRequest)
        _ = machine.startExchange(request(credential: .fixed))
        machine.closed()
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.exchange.state, .closed)
        XCTAssertEqual(machine.exchangeEvent { $0.tokenResolved(available: true) }, .none, "every later event does nothing")
    }
}
