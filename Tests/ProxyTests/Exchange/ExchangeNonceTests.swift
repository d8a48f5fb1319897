@testable import Proxy
import XCTest

/// A resource server's DPoP nonce challenge (RFC 9449 §9) as the exchange decides it: one replay
/// with the whole body and a fresh proof, never a second, never for a request that cannot be
/// sent again, and never mistaken for a rejected token.
final class ExchangeNonceTests: XCTestCase {
    private func request(idempotent: Bool = true, bodyless: Bool = true) -> Exchange.Request {
        Exchange.Request(idempotent: idempotent, keepAlive: true, bodyless: bodyless, chunked: false,
                         expectsContinue: false, credential: .refreshable)
    }

    private func challenge(status: Int = 401, nonce: Bool = true) -> Exchange.ResponseHeadFacts {
        Exchange.ResponseHeadFacts(status: status, upstreamKeepAlive: true, endsAtClose: false, clientFramedByClose: false,
                                   otherCodings: false, draining: false, nonceChallenge: nonce)
    }

    /// An exchange whose request (with `body`) was sent whole, or in part when not `complete`.
    private func forwarding(_ request: Exchange.Request, body: [UInt8] = [], complete: Bool = true) -> Exchange {
        var exchange = Exchange()
        _ = exchange.start(request)
        _ = exchange.tokenResolved(available: true)
        _ = exchange.bodyStaged(complete ? .complete : .needMore, stagedBytes: body.count,
                                heldBytes: complete ? 0 : Exchange.collectLimit, copy: body)
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: !complete, responseTimer: complete))
        return exchange
    }

    func testAChallengeIsReplayedOnceWithTheWholeBody() {
        var exchange = forwarding(request(idempotent: false, bodyless: false), body: Array("pay 10".utf8))
        XCTAssertEqual(exchange.responseHead(challenge()), .nonceReplay(checkStale: true, body: Array("pay 10".utf8)),
                       "a POST is never retried on a reused connection that might be stale; the whole body goes again")
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        XCTAssertEqual(exchange.responseHead(challenge()), .relay(reportRejection: false, keepClient: true),
                       "a second challenge goes to the app, and the token is not reported as rejected")
    }

    func testAfterANonceReplayATokenRejectionStillGetsItsOwnReplay() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.responseHead(challenge()), .nonceReplay(checkStale: false, body: []))
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        XCTAssertEqual(exchange.responseHead(challenge(nonce: false)), .holdRejection, "an ordinary 401 to the token")
        XCTAssertEqual(exchange.rejectionResolved(newToken: true), .replay(checkStale: false, body: []))
    }

    func testARequestThatCannotBeSentAgainGetsTheChallenge() {
        var streaming = forwarding(request(bodyless: false), complete: false)
        XCTAssertEqual(streaming.responseHead(challenge()), .relay(reportRejection: false, keepClient: true),
                       "the body is still arriving: nothing to replay")
    }

    func testOnlyA401IsAChallenge() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.responseHead(challenge(status: 400)), .relay(reportRejection: false, keepClient: true))
    }

    func testEveryRequestGetsItsOwnOneReplay() {
        var exchange = forwarding(request())
        XCTAssertEqual(exchange.responseHead(challenge()), .nonceReplay(checkStale: false, body: []))
        XCTAssertEqual(exchange.upstreamAssigned(upstreamConnected: true), .send(readingBody: false, responseTimer: true))
        _ = exchange.responseHead(challenge(status: 200, nonce: false))
        _ = exchange.responseBodyRelayed(.complete, trailingBytes: 0, responseBytesSent: true)
        XCTAssertFalse(exchange.isActive)
        _ = exchange.start(request())
        _ = exchange.tokenResolved(available: true)
        _ = exchange.bodyStaged(.complete, stagedBytes: 0, copy: [])
        _ = exchange.upstreamAssigned(upstreamConnected: true)
        XCTAssertEqual(exchange.responseHead(challenge()), .nonceReplay(checkStale: false, body: []), "the next request starts afresh")
    }
}
