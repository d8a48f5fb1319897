@testable import Proxy
import XCTest

/// The decisions the session used to make itself and now asks the exchange for: what readiness
/// on either side means in each phase, interim responses, whether the client connection stays
/// open, where a close-delimited body ends, when the response clock runs, and the one stale
/// connection formula.
final class ExchangeDecisionTests: XCTestCase {
    private func request(idempotent: Bool = true, keepAlive: Bool = true, bodyless: Bool = true,
                         credential: Exchange.CredentialUse = .refreshable, http11: Bool = true) -> Exchange.Request {
        Exchange.Request(idempotent: idempotent, keepAlive: keepAlive, bodyless: bodyless, chunked: false,
                         expectsContinue: false, credential: credential, http11: http11)
    }

    private func facts(status: Int = 200, upstreamKeepAlive: Bool = true, endsAtClose: Bool = false,
                       clientFramedByClose: Bool = false, otherCodings: Bool = false,
                       draining: Bool = false) -> Exchange.ResponseHeadFacts {
        Exchange.ResponseHeadFacts(status: status, upstreamKeepAlive: upstreamKeepAlive, endsAtClose: endsAtClose,
                                   clientFramedByClose: clientFramedByClose, otherCodings: otherCodings, draining: draining)
    }

    /// An exchange for `request` with its whole (bodyless) request sent upstream.
    private func forwarding(_ request: Exchange.Request, complete: Bool = true) -> Exchange {
        var exchange = Exchange()
        _ = exchange.start(request)
        if request.credential != .none { _ = exchange.tokenResolved(available: true) }
        _ = exchange.bodyStaged(complete ? .complete : .needMore, stagedBytes: 0,
                                heldBytes: complete ? 0 : Exchange.collectLimit, copy: [])
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: !complete, responseTimer: complete))
        return exchange
    }

    // MARK: - readiness per phase

    func testClientBytesMeanAHeadBetweenRequestsAndABodyDuringOne() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.clientReadable(), .readRequests)
        _ = exchange.start(request(bodyless: false))
        XCTAssertEqual(exchange.clientReadable(), .none, "no body is read before the token is known")
        _ = exchange.tokenResolved(available: true)
        XCTAssertEqual(exchange.clientReadable(), .stageBody(copy: true))

        var streaming = forwarding(request(bodyless: false), complete: false)
        XCTAssertEqual(streaming.clientReadable(), .pumpRequest(copy: true))
        XCTAssertEqual(streaming.upstreamDrained(), .resumeRequest(copy: true))
        _ = streaming.requestBodyForwarded(.complete, movedBytes: 1, copy: [0])
        XCTAssertEqual(streaming.clientReadable(), .none, "a pipelined request waits until this response is done")
        XCTAssertEqual(streaming.upstreamDrained(), .none)
    }

    func testUpstreamBytesMeanAHeadWhileForwardingAndABodyWhileRelaying() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.upstreamReadable(), .readResponseHead)
        XCTAssertTrue(exchange.readsHeadAtUpstreamEnd)
        XCTAssertEqual(exchange.responseHead(facts()), .relay(reportRejection: false, keepClient: true))
        XCTAssertEqual(exchange.upstreamReadable(), .pumpResponse)
        XCTAssertFalse(exchange.readsHeadAtUpstreamEnd)
        XCTAssertEqual(exchange.clientDrained(), .resumeResponse)

        var held = forwarding(request())
        XCTAssertEqual(held.responseHead(facts(status: 401)), .holdRejection)
        XCTAssertEqual(held.upstreamReadable(), .none, "a parked 401 stays unread")
        XCTAssertEqual(held.clientDrained(), .none)
    }

    func testADrainedClientGetsTheSpoolOnceTheBackendIsDone() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(facts())
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 10, canSpool: false)),
                       .releaseUpstream(.release))
        XCTAssertEqual(exchange.clientDrained(), .deliverSpool)
        XCTAssertEqual(exchange.spoolDelivered(), .finish(upstream: .close, keepClient: true))
        XCTAssertEqual(exchange.clientDrained(), .none)
        XCTAssertEqual(exchange.clientReadable(), .readRequests)
    }

    // MARK: - interim responses

    func testInterimResponsesReachOnlyHTTP11Clients() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.interimResponse(status: 100), .forwardInterim(toClient: true))
        XCTAssertEqual(exchange.state, .forwarding, "still waiting for the final head")
        var old = forwarding(request(http11: false))
        XCTAssertEqual(old.interimResponse(status: 103), .forwardInterim(toClient: false))
    }

    func testSwitchingProtocolsThatWasNeverAskedForIs502() {
        var exchange = forwarding(request())
        guard case .fail(.malformedResponse(let problem), close: false, retryAfter: nil) = exchange.interimResponse(status: 101) else {
            return XCTFail("a 101 must end in a 502")
        }
        XCTAssertTrue(problem.contains("switched protocols"))
        XCTAssertEqual(exchange.state, .idle)
    }

    /// A 101 to a request that asked to upgrade ends the exchange: the connections leave HTTP.
    func testSwitchingProtocolsThatWasAskedForLeavesHTTP() {
        var upgrade = request()
        upgrade.upgrade = true
        var other = forwarding(upgrade)
        guard case .fail(.malformedResponse(let problem), close: false, retryAfter: nil) = other.interimResponse(status: 101) else {
            return XCTFail("a switch to another protocol than the one asked for is a 502")
        }
        XCTAssertTrue(problem.contains("not requested"))
        var exchange = forwarding(upgrade)
        XCTAssertEqual(exchange.interimResponse(status: 101, switchesAsAsked: true), .switchProtocols)
        XCTAssertEqual(exchange.state, .closed, "no later event does anything")
        XCTAssertEqual(exchange.clientReadable(), .none)
        XCTAssertEqual(exchange.upstreamReadable(), .none)
        XCTAssertFalse(exchange.isActive)
        // Other interim responses still go on while it waits.
        var waiting = forwarding(upgrade)
        XCTAssertEqual(waiting.interimResponse(status: 100), .forwardInterim(toClient: true))
        // An ordinary final response keeps it HTTP (a refused handshake).
        XCTAssertEqual(waiting.responseHead(facts(status: 403)), .relay(reportRejection: false, keepClient: true))
    }

    // MARK: - the client connection after a response

    func testTheClientStaysOpenOnlyWhenBothAskAndTheProcessIsNotDraining() {
        var keep = forwarding(request())
        XCTAssertEqual(keep.responseHead(facts()), .relay(reportRejection: false, keepClient: true))
        var draining = forwarding(request())
        XCTAssertEqual(draining.responseHead(facts(draining: true)), .relay(reportRejection: false, keepClient: false))
        var closeFramed = forwarding(request(http11: false))
        XCTAssertEqual(closeFramed.responseHead(facts(endsAtClose: true, clientFramedByClose: true)),
                       .relay(reportRejection: false, keepClient: false), "only a close tells an HTTP/1.0 client where the body ends")
        var clientClose = forwarding(request(keepAlive: false))
        XCTAssertEqual(clientClose.responseHead(facts()), .relay(reportRejection: false, keepClient: false))
        XCTAssertEqual(clientClose.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .release, keepClient: false))
    }

    func testATransferCodingAnHTTP10ClientCannotReceiveIs502() {
        var exchange = forwarding(request(http11: false))
        guard case .fail(.malformedResponse(let problem), _, _) = exchange.responseHead(
            facts(endsAtClose: false, clientFramedByClose: true, otherCodings: true)) else {
            return XCTFail("gzip toward an HTTP/1.0 client must end in a 502")
        }
        XCTAssertTrue(problem.contains("HTTP/1.0"))
        var http11 = forwarding(request())
        XCTAssertEqual(http11.responseHead(facts(otherCodings: true)), .relay(reportRejection: false, keepClient: true),
                       "an HTTP/1.1 client gets the codings as they are")
    }

    // MARK: - where a body ends at the backend's close

    func testACloseDelimitedBodyEndsCleanlyAtTheBackendsClose() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(facts(upstreamKeepAlive: false, endsAtClose: true))
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true), .none)
        XCTAssertEqual(exchange.upstreamEnded(Exchange.UpstreamEndFacts(
            reason: .connection(.endOfStream), partialHead: false, connected: true, reused: false, nothingSent: false)),
                       .pumpResponse)
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true), .endBodyAtClose)
        XCTAssertEqual(exchange.responseEndedAtClose(clean: true), .finish(upstream: .close, keepClient: true))
    }

    func testABodyWithALengthCutShortByTheBackendsCloseIsTruncated() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(facts())
        _ = exchange.upstreamEnded(Exchange.UpstreamEndFacts(
            reason: .connection(.endOfStream), partialHead: false, connected: true, reused: false, nothingSent: false))
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true), .truncate)
        XCTAssertEqual(exchange.state, .closed)
        XCTAssertEqual(exchange.clientReadable(), .none)
    }

    func testACloseDelimitedBodyBehindASpoolEndsAfterTheSpool() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(facts(upstreamKeepAlive: false, endsAtClose: true))
        XCTAssertEqual(exchange.responseBodyRelayed(.blocked, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 0, canSpool: true)),
                       .spoolResponse)
        _ = exchange.upstreamEnded(Exchange.UpstreamEndFacts(
            reason: .connection(.endOfStream), partialHead: false, connected: true, reused: false, nothingSent: false))
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 500, canSpool: false)),
                       .endBodyAtClose)
        XCTAssertEqual(exchange.responseEndedAtClose(clean: true, undelivered: 505), .releaseUpstream(.close))
        XCTAssertEqual(exchange.clientDrained(), .deliverSpool)
    }

    // MARK: - clocks and the stale-connection formula

    func testTheResponseClockRunsOnlyForAWholeRequestWithAConnectedBackend() {
        var exchange = forwarding(request(bodyless: false), complete: false)
        XCTAssertEqual(exchange.clocks(upstreamConnected: true), .setClocks(readingBody: true, responseTimer: false),
                       "an upload is timed by bodyIdle")
        _ = exchange.requestBodyForwarded(.complete, movedBytes: 1, copy: [1])
        XCTAssertEqual(exchange.clocks(upstreamConnected: false), .setClocks(readingBody: false, responseTimer: false),
                       "connecting is timed by connect")
        XCTAssertEqual(exchange.clocks(upstreamConnected: true), .setClocks(readingBody: false, responseTimer: true))
        _ = exchange.responseHead(facts())
        XCTAssertEqual(exchange.clocks(upstreamConnected: true), .setClocks(readingBody: false, responseTimer: false),
                       "the head arrived")
    }

    func testAQueuedRequestReadsTheRestOfItsBodyOnceSent() {
        var streaming = forwarding(request(bodyless: false), complete: false)
        XCTAssertEqual(streaming.queuedRequestSent(), .resumeRequest(copy: true))
        _ = streaming.requestBodyForwarded(.complete, movedBytes: 1, copy: [1])
        XCTAssertEqual(streaming.queuedRequestSent(), .none, "the whole body went with the head")
    }

    func testAcquiringAndReplayingUseOneStaleConnectionFormula() {
        for idempotent in [true, false] {
            var exchange = Exchange()
            _ = exchange.start(request(idempotent: idempotent))
            _ = exchange.tokenResolved(available: true)
            let acquire = exchange.bodyStaged(.complete, stagedBytes: 0, copy: [])
            XCTAssertEqual(acquire, .acquireUpstream(checkStale: !idempotent, pauseClient: false))
            _ = exchange.upstreamAssigned(upstreamConnected: true)
            _ = exchange.responseHead(facts(status: 401))
            XCTAssertEqual(exchange.rejectionResolved(newToken: true), .replay(checkStale: !idempotent, body: []),
                           "a replay checks a pooled connection exactly when the first send did")
        }
    }

    /// RFC 9110 §9.2.2's idempotent methods may be retried; others (and near misses in case or
    /// length) may not.
    func testOnlyIdempotentMethodsAreRetryable() {
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            XCTAssertTrue(ExchangeSession.isIdempotent(method), method)
        }
        for method in ["POST", "PATCH", "CONNECT", "get", "GETS", "PUTS", "DELETES", "OPTION", "", "PRI"] {
            XCTAssertFalse(ExchangeSession.isIdempotent(method), method)
        }
    }
}
