@testable import Proxy
import XCTest

/// The exchange of a request the session answers itself (a ``LocalServer``'s): body collected,
/// `100 Continue` decided once, the responder asked, its answer written, keep-alive decided.
final class ExchangeLocalTests: XCTestCase {
    private func request(keepAlive: Bool = true, bodyless: Bool = false, expectsContinue: Bool = false,
                         http11: Bool = true) -> Exchange.Request {
        Exchange.Request(idempotent: false, keepAlive: keepAlive, bodyless: bodyless, chunked: false,
                         expectsContinue: expectsContinue, credential: .none, http11: http11)
    }

    /// An exchange whose request is with the responder.
    private func answering(_ request: Exchange.Request) -> Exchange {
        var exchange = Exchange()
        _ = exchange.startLocal(request, bodyTooLarge: false)
        XCTAssertEqual(exchange.localBodyCollected(.complete), .answerLocally)
        return exchange
    }

    func testTheBodyIsCollectedThenAnsweredThenTheConnectionWaitsForTheNextRequest() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.startLocal(request(), bodyTooLarge: false), .collectLocalBody(sendContinue: false))
        XCTAssertEqual(exchange.localBodyCollected(.needMore), .none)
        XCTAssertEqual(exchange.clientReadable(), .collectLocalBody(sendContinue: false), "more body bytes are collected")
        XCTAssertEqual(exchange.localBodyCollected(.complete), .answerLocally)
        XCTAssertEqual(exchange.clientReadable(), .none, "pipelined bytes wait while the responder works")
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .respondLocally(keepClient: true))
        XCTAssertTrue(exchange.isIdle)
        XCTAssertEqual(exchange.clientReadable(), .readRequests)
    }

    func testContinueIsSentOnlyWhereAClientWaitsForIt() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.startLocal(request(expectsContinue: true), bodyTooLarge: false),
                       .collectLocalBody(sendContinue: true))
        XCTAssertEqual(exchange.clientReadable(), .collectLocalBody(sendContinue: false), "once per request")
        for (label, request) in [("HTTP/1.0", request(expectsContinue: true, http11: false)),
                                 ("no body", request(bodyless: true, expectsContinue: true))] {
            var other = Exchange()
            XCTAssertEqual(other.startLocal(request, bodyTooLarge: false), .collectLocalBody(sendContinue: false), label)
        }
    }

    func testATooLargeOrMalformedBodyIsAnErrorAndAClose() {
        var declared = Exchange()
        XCTAssertEqual(declared.startLocal(request(expectsContinue: true), bodyTooLarge: true),
                       .fail(.bodyTooLarge, close: true, retryAfter: nil), "refused before any 100 Continue")
        XCTAssertEqual(declared.clientReadable(), .none)
        var grown = Exchange()
        _ = grown.startLocal(request(), bodyTooLarge: false)
        XCTAssertEqual(grown.localBodyCollected(.tooLarge), .fail(.bodyTooLarge, close: true, retryAfter: nil))
        var malformed = Exchange()
        _ = malformed.startLocal(request(), bodyTooLarge: false)
        XCTAssertEqual(malformed.localBodyCollected(.malformed), .fail(.malformedBody, close: true, retryAfter: nil))
    }

    func testAStalledBodyIsA408AndAClientThatLeavesMidBodyAborts() {
        var stalled = Exchange()
        _ = stalled.startLocal(request(), bodyTooLarge: false)
        XCTAssertEqual(stalled.clientStalled(), .fail(.bodyIdleTimeout, close: true, retryAfter: nil))
        var left = Exchange()
        _ = left.startLocal(request(), bodyTooLarge: false)
        XCTAssertEqual(left.clientEnded(cleanly: true), .abort, "a body cut short is never answered")
    }

    func testAHalfClosedClientStillGetsItsAnswerThenTheConnectionCloses() {
        var exchange = answering(request())
        XCTAssertEqual(exchange.clientEnded(cleanly: true), .none)
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .respondLocally(keepClient: false))
        XCTAssertEqual(exchange.clientReadable(), .none)
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .none, "one answer per request")
    }

    func testAClientErrorWhileAnsweringAbortsAndTheAnswerIsIgnored() {
        var exchange = answering(request())
        XCTAssertEqual(exchange.clientEnded(cleanly: false), .abort)
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .none)
    }

    func testKeepAliveNeedsTheClientAndTheResponder() {
        var closing = answering(request(keepAlive: false))
        XCTAssertEqual(closing.localAnswered(closeRequested: false), .respondLocally(keepClient: false))
        var responderCloses = answering(request())
        XCTAssertEqual(responderCloses.localAnswered(closeRequested: true), .respondLocally(keepClient: false))
    }

    func testAnswersPilingUpUnreadPauseTheClientUntilItCatchesUp() {
        var exchange = answering(request())
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .respondLocally(keepClient: true))
        XCTAssertEqual(exchange.localAnswersBacklogged(), .pauseClient)
        XCTAssertEqual(exchange.clientReadable(), .none, "no request is read meanwhile")
        XCTAssertFalse(exchange.isIdle)
        XCTAssertEqual(exchange.clientDrained(), .resumeRequests)
        XCTAssertTrue(exchange.isIdle)
    }

    func testAResponderThatNeverAnswersEndsTheConnectionAtItsTimer() {
        var exchange = answering(request())
        XCTAssertEqual(exchange.timerFired(.localAnswer), .abort)
        XCTAssertEqual(exchange.localAnswered(closeRequested: false), .none)
    }

    func testProxyEventsDoNothingToALocalExchange() {
        var exchange = Exchange()
        _ = exchange.startLocal(request(), bodyTooLarge: false)
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .none)
        XCTAssertEqual(exchange.tokenResolved(available: true), .none)
        XCTAssertEqual(exchange.start(request()), .none, "one exchange at a time")
        XCTAssertEqual(exchange.timerFired(.responseHead), .none)
    }
}
