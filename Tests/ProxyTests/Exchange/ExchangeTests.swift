@testable import Proxy
import XCTest

/// The exchange state machine without sockets: every transition and the invariants it states.
final class ExchangeTests: XCTestCase {
    private func request(idempotent: Bool = true, keepAlive: Bool = true, bodyless: Bool = true, chunked: Bool = false,
                         expectsContinue: Bool = false, credential: Exchange.CredentialUse = .refreshable) -> Exchange.Request {
        Exchange.Request(idempotent: idempotent, keepAlive: keepAlive, bodyless: bodyless, chunked: chunked,
                         expectsContinue: expectsContinue, credential: credential)
    }

    private let ok = Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: true)
    private let unauthorized = Exchange.Response(status: 401, upstreamKeepAlive: true, clientKeepAlive: true)

    /// An exchange for `request` driven up to `.forwarding` with `body` staged (complete or not).
    private func forwarding(_ request: Exchange.Request, staged body: [UInt8] = [], complete: Bool = true) -> Exchange {
        var exchange = Exchange()
        if request.credential == .none {
            XCTAssertEqual(exchange.start(request), .stageBody(copy: true))
        } else {
            XCTAssertEqual(exchange.start(request), .lookUpToken)
            XCTAssertEqual(exchange.tokenResolved(available: true), .stageBody(copy: true))
        }
        // An incomplete body streams once ``Exchange/collectLimit`` bytes were collected.
        let action = exchange.bodyStaged(complete ? .complete : .needMore, stagedBytes: body.count,
                                         heldBytes: complete ? 0 : Exchange.collectLimit, copy: body)
        // A request that could not be retried (not idempotent, or its body still coming) has its
        // connection checked first.
        XCTAssertEqual(action, .acquireUpstream(checkStale: !(request.idempotent && complete), pauseClient: false))
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: !complete, responseTimer: complete))
        XCTAssertEqual(exchange.state, .forwarding)
        return exchange
    }

    // MARK: - request side

    func testWithoutCredentialStartsStagingAtOnce() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.start(request(credential: .none)), .stageBody(copy: true))
        XCTAssertEqual(exchange.state, .awaitingBody)
        XCTAssertTrue(exchange.isActive)
    }

    func testStartOnlyFromIdle() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.start(request()), .none)
        XCTAssertEqual(exchange.state, .forwarding)
    }

    func testNoTokenFails503KeepingABodylessKeepAliveClient() {
        var exchange = Exchange()
        _ = exchange.start(request())
        XCTAssertEqual(exchange.tokenResolved(available: false), .fail(.tokenUnavailable, close: false, retryAfter: 1))
        XCTAssertEqual(exchange.state, .idle)
        var withBody = Exchange()
        _ = withBody.start(request(bodyless: false))
        XCTAssertEqual(withBody.tokenResolved(available: false), .fail(.tokenUnavailable, close: true, retryAfter: 1))
        XCTAssertEqual(withBody.state, .closed, "an unread body cannot be skipped: the connection closes")
    }

    func testChunkedBodyThatHasNotStartedWaitsThenTimesOut() {
        var exchange = Exchange()
        _ = exchange.start(request(bodyless: false, chunked: true, credential: .none))
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .waitForBody)
        XCTAssertEqual(exchange.state, .awaitingBody)
        XCTAssertEqual(exchange.timerFired(), .fail(.bodyStartTimeout, close: true, retryAfter: nil))
        XCTAssertEqual(exchange.state, .closed)
    }

    /// Each timer is the exchange's: armed by one action, stopped by the next phase's, and an
    /// expiry with none armed (a late one) does nothing.
    func testEachTimerIsArmedAndStoppedByTheExchangesOwnActions() {
        var chunked = Exchange()
        _ = chunked.start(request(bodyless: false, chunked: true, credential: .none))
        XCTAssertEqual(chunked.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .waitForBody)
        XCTAssertEqual(chunked.timer, .bodyStart)
        XCTAssertEqual(chunked.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .none,
                       "more bytes of the size line do not restart the body-start clock")
        XCTAssertEqual(chunked.bodyStaged(.complete, stagedBytes: 5, copy: Array("0\r\n\r\n".utf8)),
                       .acquireUpstream(checkStale: false, pauseClient: false))
        XCTAssertNil(chunked.timer, "the body started: its timer stops with acquireUpstream")
        XCTAssertEqual(chunked.timerFired(), .none, "a late expiry finds nothing armed")
        XCTAssertEqual(chunked.upstreamQueued(), .armQueueTimer)
        XCTAssertEqual(chunked.timer, .queue)
        XCTAssertEqual(chunked.queuedUpstreamProvided(upstreamConnected: false), .send(readingBody: false, responseTimer: false))
        XCTAssertNil(chunked.timer, "connecting is timed by connect, not by the response-head clock")
        XCTAssertEqual(chunked.clocks(upstreamConnected: true), .setClocks(readingBody: false, responseTimer: true))
        XCTAssertEqual(chunked.timer, .responseHead)
        XCTAssertEqual(chunked.interimResponse(status: 100), .forwardInterim(toClient: true))
        XCTAssertEqual(chunked.timer, .responseHead, "an interim head restarts the clock")
        XCTAssertEqual(chunked.responseHead(ok), .relay(reportRejection: false, keepClient: true))
        XCTAssertNil(chunked.timer, "the final head stops it")
        XCTAssertEqual(chunked.timerFired(), .none)

        var held = Exchange()
        _ = held.start(request(bodyless: false, chunked: true, credential: .none))
        _ = held.bodyStaged(.needMore, stagedBytes: 0, copy: nil)
        XCTAssertEqual(held.bodyStaged(.needMore, stagedBytes: 10, copy: Array(repeating: 0x61, count: 10)), .holdBody)
        XCTAssertNil(held.timer, "collecting the body is timed by bodyIdle on the client's stream")

        var replayed = forwarding(request())
        XCTAssertEqual(replayed.timer, .responseHead)
        XCTAssertEqual(replayed.responseHead(unauthorized), .holdRejection)
        XCTAssertNil(replayed.timer)
        XCTAssertEqual(replayed.rejectionResolved(newToken: true), .replay(checkStale: false, body: []))
        XCTAssertNil(replayed.timer, "the replay starts over")
        var failed = forwarding(request())
        XCTAssertEqual(failed.timerFired(), .fail(.responseTimeout, close: false, retryAfter: nil))
        XCTAssertNil(failed.timer)
    }

    /// A client that leaves mid-response: a short rest of known length, on a connection the
    /// backend keeps, after a request sent whole, is drained to keep the connection; anything
    /// else aborts the backend side at once.
    func testAClientThatLeavesDrainsOnlyAShortRestOfKnownLength() {
        func relaying(_ response: Exchange.Response, complete: Bool = true) -> Exchange {
            var exchange = self.forwarding(request(), complete: complete)
            XCTAssertEqual(exchange.responseHead(response), .relay(reportRejection: false, keepClient: response.clientKeepAlive))
            return exchange
        }
        var short = relaying(ok)
        XCTAssertEqual(short.clientEnded(cleanly: true, responseLeft: 1000), .drainUpstream(awaitingHead: false))
        XCTAssertEqual(short.state, .closed)
        XCTAssertEqual(short.upstreamReadable(), .none, "the drain owns the upstream now")
        var limit = relaying(ok)
        XCTAssertEqual(limit.clientEnded(cleanly: false, responseLeft: Exchange.drainLimit), .drainUpstream(awaitingHead: false), "a reset client too")
        for (label, response, left, complete) in [
            ("more than the limit", ok, Exchange.drainLimit + 1, true),
            ("a body of unknown length (chunked: a stream)", ok, nil, true),
            ("a backend that closes after it", Exchange.Response(status: 200, upstreamKeepAlive: false, clientKeepAlive: true), 10, true),
            ("a body that ends at the close", Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: false, endsAtClose: true), 10, true),
            ("an upload still under way", ok, 10, false)] as [(String, Exchange.Response, Int?, Bool)] {
            var exchange = relaying(response, complete: complete)
            XCTAssertEqual(exchange.clientEnded(cleanly: true, responseLeft: left), .abort, label)
        }
        var headless = self.forwarding(request())
        XCTAssertEqual(headless.clientEnded(cleanly: true, responseLeft: 0), .drainUpstream(awaitingHead: true),
                       "no head yet: the drain awaits it (briefly) and then decides")
        var uploading = self.forwarding(request(), complete: false)
        XCTAssertEqual(uploading.clientEnded(cleanly: true), .abort, "a request not sent whole is never finished")
        var upgrading = Exchange()
        _ = upgrading.start({ var r = request(); r.upgrade = true; return r }())
        _ = upgrading.tokenResolved(available: true)
        _ = upgrading.bodyStaged(.complete, stagedBytes: 0, copy: [])
        _ = upgrading.upstreamAssigned(upstreamConnected: true)
        XCTAssertEqual(upgrading.clientEnded(cleanly: true), .abort, "an upgrade's connection is never kept")
        var ended = relaying(ok)
        XCTAssertEqual(ended.upstreamEnded(Exchange.UpstreamEndFacts(reason: .connection(.endOfStream), partialHead: false,
                                                                       connected: true, reused: false, nothingSent: false)), .pumpResponse)
        XCTAssertEqual(ended.clientEnded(cleanly: true, responseLeft: 10), .abort, "the backend already closed")
        var stalled = relaying(ok)
        XCTAssertEqual(stalled.clientStalled(), .abort, "a client that stopped reading is cut, not drained for")
    }

    func testABodyIsCollectedUntilCompleteBeforeAConnectionIsTaken() {
        var exchange = Exchange()
        _ = exchange.start(request(idempotent: false, bodyless: false, credential: .none))
        let drip = [UInt8](repeating: 7, count: 8)
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .holdBody,
                       "a Content-Length body that has not started takes no connection either")
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 8, heldBytes: 0, copy: drip), .holdBody)
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 8, heldBytes: 8, copy: drip), .holdBody)
        XCTAssertEqual(exchange.state, .awaitingBody)
        XCTAssertEqual(exchange.bodyStaged(.complete, stagedBytes: 8, heldBytes: 16, copy: drip),
                       .acquireUpstream(checkStale: true, pauseClient: false))
        XCTAssertTrue(exchange.requestComplete)
        XCTAssertEqual(exchange.resendBody, drip + drip + drip, "the bytes of every step are kept for a replay, in order")
    }

    func testAStreamedBodyIsNeverCollectedAndAGRPCCallsHeadGoesFirst() {
        // An HTTP/2 stream's body without a length (a gRPC call, a conversation): its sender
        // may wait for an answer to its first message before it sends the next.
        var streamed = request(idempotent: false, bodyless: false, chunked: true, credential: .none)
        streamed.bodyFlow = .streamed
        var grpc = streamed
        grpc.bodyFlow = .streamedHeadFirst
        var headOnly = Exchange()
        _ = headOnly.start(grpc)
        XCTAssertEqual(headOnly.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .acquireUpstream(checkStale: true, pauseClient: false),
                       "a gRPC call's head goes on before any of the body (a server may speak first)")
        XCTAssertNil(headOnly.timer, "no wait for the first chunk")
        var waiting = Exchange()
        _ = waiting.start(streamed)
        XCTAssertEqual(waiting.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .waitForBody,
                       "another stream's first bytes are waited for (within clientHeader): a stream that sends none holds no backend connection")
        XCTAssertEqual(waiting.timer, .bodyStart)
        var firstMessage = Exchange()
        _ = firstMessage.start(streamed)
        XCTAssertEqual(firstMessage.bodyStaged(.needMore, stagedBytes: 12, copy: Array(repeating: 1, count: 12)),
                       .acquireUpstream(checkStale: true, pauseClient: false))
        XCTAssertFalse(firstMessage.requestComplete)
        XCTAssertEqual(firstMessage.resendBody, Array(repeating: 1, count: 12), "what went on is still kept for a replay")
        // The same body from an HTTP/1.1 client is collected, as before.
        var collected = Exchange()
        _ = collected.start(request(idempotent: false, bodyless: false, chunked: true, credential: .none))
        XCTAssertEqual(collected.bodyStaged(.needMore, stagedBytes: 12, copy: nil), .holdBody)
    }

    func testAStalledCollectedBodyFails408ButAStalledForwardedOneAborts() {
        var collecting = Exchange()
        _ = collecting.start(request(idempotent: false, bodyless: false, credential: .none))
        XCTAssertEqual(collecting.bodyStaged(.needMore, stagedBytes: 8, copy: nil), .holdBody)
        XCTAssertEqual(collecting.clientStalled(), .fail(.bodyIdleTimeout, close: true, retryAfter: nil))
        XCTAssertEqual(collecting.state, .closed)
        var forwarding = forwarding(request(idempotent: false, bodyless: false), staged: [1], complete: false)
        XCTAssertEqual(forwarding.clientStalled(), .abort, "once the backend has the request, a stalled client aborts it")
    }

    func testALongBodyStreamsOnceTheCollectLimitIsReached() {
        var exchange = Exchange()
        _ = exchange.start(request(idempotent: false, bodyless: false, credential: .none))
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 1000, heldBytes: Exchange.collectLimit - 1001, copy: nil),
                       .holdBody)
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 1, heldBytes: Exchange.collectLimit - 1, copy: nil),
                       .acquireUpstream(checkStale: true, pauseClient: false))
        XCTAssertFalse(exchange.requestComplete)
        var blocked = Exchange()
        _ = blocked.start(request(idempotent: false, bodyless: false, credential: .none))
        XCTAssertEqual(blocked.bodyStaged(.blocked, stagedBytes: 10, copy: nil), .acquireUpstream(checkStale: true, pauseClient: true),
                       "a full staging buffer is long enough")
    }

    func testABodySignedOverItsHashIsHeldWholeAndRefusedPastItsLimit() {
        var signed = request(idempotent: false, bodyless: false, credential: .fixed)
        signed.wholeBodyLimit = 100_000
        var exchange = Exchange()
        _ = exchange.start(signed)
        _ = exchange.tokenResolved(available: true)
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 1000, heldBytes: Exchange.collectLimit, copy: nil), .holdBody,
                       "held past the collect limit: the head waits for the last byte")
        XCTAssertEqual(exchange.bodyStaged(.complete, stagedBytes: 10, heldBytes: 90_000, copy: nil),
                       .acquireUpstream(checkStale: true, pauseClient: false))
        XCTAssertTrue(exchange.requestComplete)
        var large = Exchange()
        _ = large.start(signed)
        _ = large.tokenResolved(available: true)
        XCTAssertEqual(large.bodyStaged(.needMore, stagedBytes: 2, heldBytes: 99_999, copy: nil),
                       .fail(.bodyTooLargeToHash(limit: 100_000), close: true, retryAfter: nil), "nothing forwarded")
        var blocked = Exchange()
        _ = blocked.start(signed)
        _ = blocked.tokenResolved(available: true)
        XCTAssertEqual(blocked.bodyStaged(.blocked, stagedBytes: 10, copy: nil), .fail(.bodyTooLargeToHash(limit: 100_000), close: true, retryAfter: nil))
    }

    func testExpectContinueBodyIsNeverHeld() {
        var exchange = Exchange()
        _ = exchange.start(request(idempotent: false, bodyless: false, expectsContinue: true, credential: .none))
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .acquireUpstream(checkStale: true, pauseClient: false),
                       "the client waits for the backend's 100 before it sends the body")
    }

    func testExpectContinueChunkedBodyIsNotWaitedFor() {
        var exchange = Exchange()
        _ = exchange.start(request(idempotent: false, bodyless: false, chunked: true, expectsContinue: true, credential: .none))
        XCTAssertEqual(exchange.bodyStaged(.needMore, stagedBytes: 0, copy: nil), .acquireUpstream(checkStale: true, pauseClient: false))
    }

    func testMalformedStagedBodyFails400AndCloses() {
        var exchange = Exchange()
        _ = exchange.start(request(bodyless: false, chunked: true, credential: .none))
        XCTAssertEqual(exchange.bodyStaged(.malformed, stagedBytes: 0, copy: nil), .fail(.malformedBody, close: true, retryAfter: nil))
    }

    func testFullStagingPausesTheClient() {
        var exchange = Exchange()
        _ = exchange.start(request(idempotent: false, bodyless: false, credential: .none))
        let bytes = [UInt8](repeating: 1, count: 10)
        XCTAssertEqual(exchange.bodyStaged(.blocked, stagedBytes: 10, copy: bytes), .acquireUpstream(checkStale: true, pauseClient: true))
        XCTAssertFalse(exchange.requestComplete)
    }

    func testQueuedThenAssignedOrTimedOutOrOverloaded() {
        var queued = Exchange()
        _ = queued.start(request(credential: .none))
        _ = queued.bodyStaged(.complete, stagedBytes: 0, copy: [])
        XCTAssertEqual(queued.upstreamQueued(), .armQueueTimer)
        XCTAssertEqual(queued.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        var timedOut = Exchange()
        _ = timedOut.start(request(credential: .none))
        _ = timedOut.bodyStaged(.complete, stagedBytes: 0, copy: [])
        _ = timedOut.upstreamQueued()
        XCTAssertEqual(timedOut.timerFired(), .fail(.connectionLimit, close: true, retryAfter: 1))
        var overloaded = Exchange()
        _ = overloaded.start(request(credential: .none))
        _ = overloaded.bodyStaged(.complete, stagedBytes: 0, copy: [])
        XCTAssertEqual(overloaded.upstreamUnavailable(), .fail(.connectionLimit, close: true, retryAfter: 1))
    }

    func testRequestBodyStreamsToCompletion() {
        var exchange = forwarding(request(idempotent: false, bodyless: false), staged: [1, 2], complete: false)
        XCTAssertEqual(exchange.requestBodyForwarded(.needMore, movedBytes: 2, copy: [3, 4]), .none)
        XCTAssertEqual(exchange.requestBodyForwarded(.blocked, movedBytes: 1, copy: [5]), .pauseClient)
        XCTAssertEqual(exchange.requestBodyForwarded(.complete, movedBytes: 1, copy: [6]), .requestComplete)
        XCTAssertTrue(exchange.requestComplete)
        XCTAssertEqual(exchange.resendBody, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(exchange.requestBodyForwarded(.complete, movedBytes: 0, copy: nil), .none, "nothing after completion")
    }

    func testMalformedRequestBodyBeforeAResponseFails400() {
        var exchange = forwarding(request(bodyless: false, chunked: true), staged: [1], complete: false)
        XCTAssertEqual(exchange.requestBodyForwarded(.malformed, movedBytes: 0, copy: nil), .fail(.malformedBody, close: true, retryAfter: nil))
        XCTAssertEqual(exchange.state, .closed)
    }

    func testMalformedRequestBodyDuringAResponseAborts() {
        var exchange = forwarding(request(bodyless: false, chunked: true), staged: [1], complete: false)
        XCTAssertEqual(exchange.responseHead(ok), .relay(reportRejection: false, keepClient: true))
        XCTAssertEqual(exchange.requestBodyForwarded(.malformed, movedBytes: 0, copy: nil), .abort)
    }

    // MARK: - resend copy (invariant: a replay sends exactly the original body)

    func testBodyPastTheResendLimitIsNeverKept() {
        var exchange = forwarding(request(idempotent: false, bodyless: false), staged: [UInt8](repeating: 7, count: 60 * 1024), complete: false)
        XCTAssertTrue(exchange.wantsBodyCopy)
        _ = exchange.requestBodyForwarded(.complete, movedBytes: 8 * 1024, copy: [UInt8](repeating: 7, count: 8 * 1024))
        XCTAssertFalse(exchange.wantsBodyCopy)
        XCTAssertEqual(exchange.resendBody, [])
        // …so its 401 is passed through at once, never replayed with part of the body.
        XCTAssertEqual(exchange.responseHead(unauthorized), .relay(reportRejection: true, keepClient: true))
    }

    func testAMissingCopyDropsTheResendCopy() {
        var exchange = forwarding(request(bodyless: false), staged: [1], complete: false)
        _ = exchange.requestBodyForwarded(.complete, movedBytes: 3, copy: nil)
        XCTAssertFalse(exchange.wantsBodyCopy, "a copy with a gap must never be replayed")
        XCTAssertEqual(exchange.responseHead(unauthorized), .relay(reportRejection: true, keepClient: true))
    }

    // MARK: - 401

    func testA401IsHeldAndReplayedWithExactlyTheOriginalBody() {
        let body: [UInt8] = Array("0123456789".utf8)
        var exchange = forwarding(request(idempotent: false, bodyless: false), staged: Array(body[0..<4]), complete: false)
        _ = exchange.requestBodyForwarded(.complete, movedBytes: 6, copy: Array(body[4...]))
        XCTAssertEqual(exchange.responseHead(unauthorized), .holdRejection)
        XCTAssertEqual(exchange.state, .holdingRejection(unauthorized))
        XCTAssertEqual(exchange.rejectionResolved(newToken: true), .replay(checkStale: true, body: body),
                       "the replay carries every byte of the original body")
        XCTAssertEqual(exchange.state, .awaitingUpstream)
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        // A second 401 is passed on: one replay per request.
        XCTAssertEqual(exchange.responseHead(unauthorized), .relay(reportRejection: true, keepClient: true))
    }

    func testAGRPCUnauthenticatedIsHeldAndReplayedAsA401Is() {
        // A trailers-only grpc-status 16 is a 200 on the wire: the facts say what it is.
        var exchange = forwarding(request(idempotent: false, bodyless: false), staged: Array("call".utf8))
        let facts = Exchange.ResponseHeadFacts(status: 200, upstreamKeepAlive: true, endsAtClose: false, clientFramedByClose: false,
                                               otherCodings: false, draining: false, grpcUnauthenticated: true)
        XCTAssertEqual(exchange.responseHead(facts), .holdRejection)
        XCTAssertEqual(exchange.rejectionResolved(newToken: true), .replay(checkStale: true, body: Array("call".utf8)))
        // The same 200 without the flag is relayed as it is.
        var plain = forwarding(request())
        let ok = Exchange.ResponseHeadFacts(status: 200, upstreamKeepAlive: true, endsAtClose: false, clientFramedByClose: false,
                                            otherCodings: false, draining: false)
        XCTAssertEqual(plain.responseHead(ok), .relay(reportRejection: false, keepClient: true))
    }

    func testA401WithoutADifferentTokenIsRelayed() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.responseHead(unauthorized), .holdRejection)
        XCTAssertEqual(exchange.rejectionResolved(newToken: false), .relay(reportRejection: false, keepClient: true))
        XCTAssertEqual(exchange.state, .relaying(unauthorized))
    }

    func testA401ForAnIncompleteRequestIsRelayed() {
        var exchange = forwarding(request(bodyless: false), staged: [1], complete: false)
        XCTAssertEqual(exchange.responseHead(unauthorized), .relay(reportRejection: true, keepClient: true))
    }

    func testA401ForAStaticTokenIsRelayedAndOneWithoutTokenIsAnOrdinaryResponse() {
        var fixed = forwarding(request(credential: .fixed))
        XCTAssertEqual(fixed.responseHead(unauthorized), .relay(reportRejection: true, keepClient: true))
        var none = forwarding(request(credential: .none))
        XCTAssertEqual(none.responseHead(unauthorized), .relay(reportRejection: false, keepClient: true))
    }

    func testBackendClosingWhileA401IsHeldStillRelaysIt() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(unauthorized)
        let end = Exchange.UpstreamEndFacts(reason: .connection(.endOfStream), partialHead: false, connected: true, reused: false, nothingSent: false)
        XCTAssertEqual(exchange.upstreamEnded(end), .none)
        XCTAssertEqual(exchange.rejectionResolved(newToken: false), .relay(reportRejection: false, keepClient: true))
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: false),
                       .finish(upstream: .close, keepClient: true), "a closed upstream is never pooled")
    }

    // MARK: - response side (invariant: released only after a complete response, nothing beyond)

    func testCompleteResponseReleasesTheUpstreamAndKeepsTheClient() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true), .none)
        XCTAssertEqual(exchange.responseBodyRelayed(.blocked, trailingBytes: 0, responseBytesSent: true), .pauseUpstream)
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .release, keepClient: true))
        XCTAssertEqual(exchange.state, .idle)
        XCTAssertFalse(exchange.isActive)
    }

    func testBytesBeyondTheResponseDiscardTheUpstream() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 17, responseBytesSent: false),
                       .finish(upstream: .discardUnexpectedBytes, keepClient: true))
    }

    func testEarlyResponseToAnIncompleteRequestClosesBothSides() {
        var exchange = forwarding(request(bodyless: false), staged: [1], complete: false)
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .close, keepClient: false))
        XCTAssertEqual(exchange.state, .closed)
    }

    /// An upstream that is one stream of a shared HTTP/2 connection ends that stream alone when
    /// it answers before the request ended: it is released for the next request (its driver
    /// resets the stream with NO_ERROR), while the client, whose request is cut, is not kept.
    func testEarlyResponseFromAnHTTP2StreamReleasesItAndStillClosesTheClient() {
        var exchange = forwarding(request(bodyless: false), staged: [1], complete: false)
        _ = exchange.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: true, upstreamIsStream: true))
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .release, keepClient: false))
        XCTAssertEqual(exchange.state, .closed)
        // A stream that ended (reset, its connection gone) is not released for all that.
        var ended = forwarding(request(bodyless: false), staged: [1], complete: false)
        _ = ended.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: true, upstreamIsStream: true))
        XCTAssertEqual(ended.upstreamEnded(Exchange.UpstreamEndFacts(reason: .connection(.endOfStream), partialHead: false, connected: true,
                                                                     reused: false, nothingSent: false)), .pumpResponse)
        XCTAssertEqual(ended.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .close, keepClient: false))
    }

    func testUpstreamOrClientClosingDecidesReuse() {
        var upstreamCloses = forwarding(request())
        _ = upstreamCloses.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: false, clientKeepAlive: true))
        XCTAssertEqual(upstreamCloses.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .close, keepClient: true))
        var clientCloses = forwarding(request(keepAlive: false))
        _ = clientCloses.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: false))
        XCTAssertEqual(clientCloses.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true),
                       .finish(upstream: .release, keepClient: false))
    }

    func testMalformedResponseBeforeAnyByteLeftIs502() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.malformed, trailingBytes: 0, responseBytesSent: false),
                       .fail(.malformedResponse("the backend sent a malformed response body"), close: false, retryAfter: nil))
        var head = forwarding(request())
        XCTAssertEqual(head.responseMalformed("bad head", responseBytesSent: false), .fail(.malformedResponse("bad head"), close: false, retryAfter: nil))
    }

    func testMalformedResponseAfterBytesLeftTruncates() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.malformed, trailingBytes: 0, responseBytesSent: true), .truncate)
        XCTAssertEqual(exchange.state, .closed)
    }

    func testBackendCloseDuringTheBodyEndsCleanlyOnlyForCloseDelimitedBodies() {
        var delimited = forwarding(request())
        _ = delimited.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: false, clientKeepAlive: true))
        let end = Exchange.UpstreamEndFacts(reason: .connection(.endOfStream), partialHead: false, connected: true, reused: false, nothingSent: false)
        XCTAssertEqual(delimited.upstreamEnded(end), .pumpResponse)
        XCTAssertTrue(delimited.upstreamEnded)
        XCTAssertEqual(delimited.responseEndedAtClose(clean: true), .finish(upstream: .close, keepClient: true))
        var cut = forwarding(request())
        _ = cut.responseHead(ok)
        _ = cut.upstreamEnded(end)
        XCTAssertEqual(cut.responseEndedAtClose(clean: false), .truncate)
    }

    // MARK: - spooling (invariant: an upstream is released only once the whole response is spooled)

    private let room = Exchange.SpoolFacts(undelivered: 0, canSpool: true)

    func testABlockedResponseSpoolsWhenThereIsRoomAndPausesTheBackendWhenNot() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.blocked, trailingBytes: 0, responseBytesSent: true, spool: room), .spoolResponse)
        XCTAssertEqual(exchange.responseBodyRelayed(.blocked, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 4096, canSpool: false)),
                       .pauseUpstream, "a full budget holds the backend, as without a spool")
        XCTAssertEqual(exchange.responseBodyRelayed(.needMore, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 4096, canSpool: true)), .none)
        XCTAssertEqual(exchange.state, .relaying(ok))
    }

    func testACompleteSpooledResponseReleasesTheUpstreamThenFinishesWhenDelivered() {
        var exchange = forwarding(request())
        _ = exchange.responseHead(ok)
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                                    spool: Exchange.SpoolFacts(undelivered: 1, canSpool: true)),
                       .releaseUpstream(.release))
        XCTAssertEqual(exchange.state, .deliveringSpool(keepClient: true))
        XCTAssertTrue(exchange.isActive, "the client is still being served")
        XCTAssertFalse(exchange.isSendingRequestBody)
        XCTAssertEqual(exchange.upstreamEnded(end(.connection(.endOfStream))), .none, "the released upstream is no longer ours")
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true), .none)
        XCTAssertEqual(exchange.spoolDelivered(), .finish(upstream: .close, keepClient: true))
        XCTAssertEqual(exchange.state, .idle)
        XCTAssertEqual(exchange.spoolDelivered(), .none)
    }

    func testASpooledResponseKeepsTheUpstreamDispositionAndTheClientsChoice() {
        var beyond = forwarding(request())
        _ = beyond.responseHead(ok)
        XCTAssertEqual(beyond.responseBodyRelayed(.complete, trailingBytes: 5, responseBytesSent: true,
                                                  spool: Exchange.SpoolFacts(undelivered: 10, canSpool: true)),
                       .releaseUpstream(.discardUnexpectedBytes), "bytes beyond a spooled response still reach no client")
        var closing = forwarding(request(keepAlive: false))
        _ = closing.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: true, clientKeepAlive: false))
        XCTAssertEqual(closing.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                                   spool: Exchange.SpoolFacts(undelivered: 10, canSpool: true)),
                       .releaseUpstream(.release))
        XCTAssertEqual(closing.spoolDelivered(), .finish(upstream: .close, keepClient: false))
        XCTAssertEqual(closing.state, .closed)
    }

    func testACloseDelimitedSpooledResponseIsDeliveredAndACutOneTruncates() {
        var delimited = forwarding(request())
        _ = delimited.responseHead(Exchange.Response(status: 200, upstreamKeepAlive: false, clientKeepAlive: false))
        _ = delimited.upstreamEnded(end(.connection(.endOfStream)))
        XCTAssertEqual(delimited.responseEndedAtClose(clean: true, undelivered: 100), .releaseUpstream(.close))
        XCTAssertEqual(delimited.spoolDelivered(), .finish(upstream: .close, keepClient: false))
        var cut = forwarding(request())
        _ = cut.responseHead(ok)
        _ = cut.upstreamEnded(end(.connection(.endOfStream)))
        XCTAssertEqual(cut.responseEndedAtClose(clean: false, undelivered: 100), .truncate, "a cut body is never completed")
    }

    func testASpoolFailureTruncatesWhileRelayingOrDelivering() {
        var relaying = forwarding(request())
        _ = relaying.responseHead(ok)
        XCTAssertEqual(relaying.spoolFailed(), .truncate)
        XCTAssertEqual(relaying.state, .closed)
        var delivering = forwarding(request())
        _ = delivering.responseHead(ok)
        _ = delivering.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                           spool: Exchange.SpoolFacts(undelivered: 1, canSpool: false))
        XCTAssertEqual(delivering.spoolFailed(), .truncate)
        XCTAssertEqual(delivering.spoolDelivered(), .none)
        var idle = Exchange()
        XCTAssertEqual(idle.spoolFailed(), .none)
    }

    func testAWaitingRequestTakesTheUpstreamOnlyFromARelayingResponse() {
        var relaying = forwarding(request())
        _ = relaying.responseHead(ok)
        XCTAssertEqual(relaying.upstreamWanted(), .abort)
        XCTAssertEqual(relaying.state, .closed)
        var delivering = forwarding(request())
        _ = delivering.responseHead(ok)
        _ = delivering.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                           spool: Exchange.SpoolFacts(undelivered: 1, canSpool: false))
        XCTAssertEqual(delivering.upstreamWanted(), .none, "a spooled response holds no upstream")
        var forwarding = forwarding(request())
        XCTAssertEqual(forwarding.upstreamWanted(), .none, "a request still waiting for its response is never cut")
    }

    func testAClientThatLeavesOrStallsDuringDeliveryAborts() {
        for stalls in [false, true] {
            var exchange = forwarding(request())
            _ = exchange.responseHead(ok)
            _ = exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true,
                                             spool: Exchange.SpoolFacts(undelivered: 1, canSpool: false))
            XCTAssertEqual(stalls ? exchange.clientStalled() : exchange.clientEnded(), .abort)
            XCTAssertEqual(exchange.state, .closed)
        }
    }

    // MARK: - upstream ends before a response

    private func end(_ reason: UpstreamEnd, partial: Bool = false, connected: Bool = true, reused: Bool = false,
                     nothingSent: Bool = false) -> Exchange.UpstreamEndFacts {
        Exchange.UpstreamEndFacts(reason: reason, partialHead: partial, connected: connected, reused: reused, nothingSent: nothingSent)
    }

    func testAStreamRefusedUnprocessedGoesAgainAFewTimesWhateverItsMethod() {
        var exchange = forwarding(request(idempotent: false, bodyless: false), staged: [7, 8])
        for _ in 1..<Exchange.maxRefusals {
            XCTAssertEqual(exchange.upstreamEnded(end(.streamRefused)), .retry(body: [7, 8]))
            XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        }
        guard case .fail(.upstreamEnd(.streamRefused, _, _), _, _) = exchange.upstreamEnded(end(.streamRefused)) else {
            return XCTFail("the last refusal fails the request")
        }
    }

    func testStalePooledConnectionRetriesIdempotentRequestsOnce() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.upstreamEnded(end(.connection(.endOfStream), reused: true)), .retry(body: []))
        XCTAssertEqual(exchange.state, .awaitingUpstream)
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        XCTAssertEqual(exchange.upstreamEnded(end(.connection(.endOfStream), reused: true)),
                       .fail(.upstreamEnd(.connection(.endOfStream), connected: true, partial: false), close: false, retryAfter: nil))
    }

    func testNonIdempotentRequestIsRetriedOnlyIfNothingWasSent() {
        var sent = forwarding(request(idempotent: false))
        XCTAssertEqual(sent.upstreamEnded(end(.connection(.endOfStream), reused: true)),
                       .fail(.upstreamEnd(.connection(.endOfStream), connected: true, partial: false), close: false, retryAfter: nil))
        var unsent = forwarding(request(idempotent: false))
        XCTAssertEqual(unsent.upstreamEnded(end(.connection(.endOfStream), reused: true, nothingSent: true)), .retry(body: []))
    }

    func testRefusedNewConnectionIsRetriedAndAPartialHeadIsNot() {
        var refused = forwarding(request(idempotent: false))
        XCTAssertEqual(refused.upstreamEnded(end(.connection(.refused), connected: false)), .retry(body: []))
        var partial = forwarding(request())
        XCTAssertEqual(partial.upstreamEnded(end(.connection(.endOfStream), partial: true, reused: true)),
                       .fail(.upstreamEnd(.connection(.endOfStream), connected: true, partial: true), close: false, retryAfter: nil))
    }

    func testIncompleteRequestIsNeverRetried() {
        var exchange = forwarding(request(bodyless: false), staged: [1], complete: false)
        XCTAssertEqual(exchange.upstreamEnded(end(.connection(.refused), connected: false)),
                       .fail(.upstreamEnd(.connection(.refused), connected: false, partial: false), close: true, retryAfter: nil))
    }

    func testConnectTimeoutAndProhibitedDestinationFail() {
        var timeout = forwarding(request())
        XCTAssertEqual(timeout.upstreamEnded(end(.connectTimeout, connected: false)),
                       .fail(.upstreamEnd(.connectTimeout, connected: false, partial: false), close: false, retryAfter: nil))
        var prohibited = forwarding(request())
        XCTAssertEqual(prohibited.upstreamEnded(end(.prohibitedDestination, connected: false)),
                       .fail(.upstreamEnd(.prohibitedDestination, connected: false, partial: false), close: false, retryAfter: nil))
    }

    func testResponseHeadTimeout() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.timerFired(), .fail(.responseTimeout, close: false, retryAfter: nil))
        var relaying = forwarding(request())
        _ = relaying.responseHead(ok)
        XCTAssertEqual(relaying.timerFired(), .none, "a late timer is ignored")
    }

    // MARK: - client side (invariant: a client that leaves aborts the upstream at once)

    func testClientEndBetweenRequestsCloses() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.clientEnded(), .close)
        XCTAssertEqual(exchange.clientEnded(), .none)
    }

    func testClientEndDuringAnyPhaseAborts() {
        var phases: [Exchange] = []
        var awaitingToken = Exchange()
        _ = awaitingToken.start(request())
        phases.append(awaitingToken)
        var awaitingUpstream = Exchange()
        _ = awaitingUpstream.start(request(credential: .none))
        _ = awaitingUpstream.bodyStaged(.complete, stagedBytes: 0, copy: [])
        phases.append(awaitingUpstream)
        phases.append(forwarding(request(), complete: false))  // (sent whole, it is drained: the test above)
        var relaying = forwarding(request())
        _ = relaying.responseHead(ok)
        phases.append(relaying)
        var holding = forwarding(request())
        _ = holding.responseHead(unauthorized)
        phases.append(holding)
        for var exchange in phases {
            let phase = exchange.state
            XCTAssertEqual(exchange.clientEnded(), .abort, "\(phase)")
            XCTAssertEqual(exchange.state, .closed)
            XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .none, "nothing happens after an abort")
            XCTAssertEqual(exchange.rejectionResolved(newToken: true), .none)
        }
    }

    func testEventsOutOfPhaseAreIgnored() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.tokenResolved(available: true), .none)
        XCTAssertEqual(exchange.bodyStaged(.complete, stagedBytes: 0, copy: nil), .none)
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .none)
        XCTAssertEqual(exchange.responseHead(ok), .none)
        XCTAssertEqual(exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: false), .none)
        XCTAssertEqual(exchange.timerFired(), .none)
        XCTAssertEqual(exchange.state, .idle)
    }
}
