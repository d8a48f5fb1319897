@_spi(Testing) import EventLoop
import HTTPMessage
import TestSupport
import XCTest
@testable import Proxy

/// A ``LocalServer``'s session over in-memory streams: requests answered by a responder instead
/// of an upstream, through the same session and exchange as proxied ones. No socket, no sleep.
final class ClientSessionLocalTests: XCTestCase {
    /// Answers at once with the path and the body's length.
    private static func echo(_ request: LocalRequest, _ respond: (LocalResponse) -> Void) {
        respond(.text("\(request.method) \(request.path) \(request.body.count)"))
    }

    /// Bodies of the complete responses in `text`, in order (Content-Length framed).
    private func bodies(_ text: String) -> [String] {
        var result: [String] = []
        var rest = Substring(text)
        while let headEnd = rest.range(of: "\r\n\r\n") {
            let head = rest[..<headEnd.lowerBound]
            guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                  let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else { break }
            let body = rest[headEnd.upperBound...].prefix(length)
            result.append(String(body))
            rest = rest[headEnd.upperBound...].dropFirst(length)
        }
        return result
    }

    func testThousandsOfPipelinedRequestsAnsweredAtOnceComeBackInOrderWithoutRecursion() throws {
        let harness = try SessionHarness { request, respond in Self.echo(request, respond) }
        let client = harness.connectClient()
        let count = 5_000
        client.receive((0..<count).map { "GET /r\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        // The client reads as it goes: answers past the high watermark wait until it has.
        var answers: [String] = []
        for _ in 0..<10 where answers.count < count { answers = bodies(client.readAll()) }
        XCTAssertEqual(answers.count, count)
        XCTAssertEqual(answers.first, "GET /r0 0")
        XCTAssertEqual(answers.last, "GET /r\(count - 1) 0")
        XCTAssertEqual(client.ending, .open)
    }

    func testAChunkedBodySplitAtEveryByteArrivesWhole() throws {
        let harness = try SessionHarness { request, respond in Self.echo(request, respond) }
        let client = harness.connectClient()
        let request = Array("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n".utf8)
        for byte in request { client.receive([byte]) }
        XCTAssertEqual(bodies(client.readAll()), ["POST /c 11"])
        XCTAssertEqual(client.ending, .open)
    }

    func testExpectContinueIsAnsweredByTheSessionBeforeTheBody() throws {
        let harness = try SessionHarness { request, respond in Self.echo(request, respond) }
        let client = harness.connectClient()
        client.receive("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(client.readAll(), "HTTP/1.1 100 Continue\r\n\r\n")
        client.clearDelivered()
        client.receive("ok")
        XCTAssertEqual(bodies(client.readAll()), ["POST /e 2"])
    }

    func testAnAnswerGivenLaterGoesOutAndThePipelinedRequestFollows() throws {
        var pending: [(LocalResponse) -> Void] = []
        let harness = try SessionHarness { _, respond in pending.append(respond) }
        let client = harness.connectClient()
        client.receive("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(pending.count, 1, "the second request waits for the first answer")
        XCTAssertEqual(client.readAll(), "")
        pending[0](.text("a"))
        pending[0](.text("a again"))  // a second answer is ignored
        XCTAssertEqual(pending.count, 2)
        pending[1](.text("b"))
        XCTAssertEqual(bodies(client.readAll()), ["a", "b"])
    }

    func testAHalfClosedClientGetsItsAnswerAndAResetClientNone() throws {
        var pending: [(LocalResponse) -> Void] = []
        let harness = try SessionHarness { _, respond in pending.append(respond) }
        let halfClosed = harness.connectClient()
        halfClosed.receive("GET /h HTTP/1.1\r\nHost: x\r\n\r\n")
        halfClosed.end(.endOfStream)
        XCTAssertEqual(halfClosed.ending, .open, "a half-close after a request still expects the answer")
        pending[0](.text("late"))
        XCTAssertTrue(halfClosed.readAll().contains("Connection: close\r\n"))
        XCTAssertEqual(halfClosed.ending, .closedAfterFlush)

        let reset = harness.connectClient()
        reset.receive("GET /r HTTP/1.1\r\nHost: x\r\n\r\n")
        reset.end(.socketError(errno: 104))
        XCTAssertEqual(reset.ending, .closed)
        pending[1](.text("nobody listens"))
        XCTAssertEqual(reset.readAll(), "", "an answer after the client left goes nowhere")
    }

    func testBodiesOverTheLimitAre413WithoutReadingThemAndAStalledBodyIs408() throws {
        var asked = 0
        let harness = try SessionHarness(limits: LocalServerLimits(maxBodyBytes: 10)) { request, respond in
            asked += 1
            Self.echo(request, respond)
        }
        let declared = harness.connectClient()
        declared.receive("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n")
        let refused = declared.readAll()
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 413 "), refused)
        XCTAssertFalse(refused.contains("100 Continue"), "no invitation to send a body that is refused")
        XCTAssertTrue(refused.contains("Proxy-Status: token-sidecar; error=http_request_error"))
        XCTAssertEqual(declared.ending, .closedAfterFlush)

        let chunked = harness.connectClient()
        chunked.receive("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n")
        XCTAssertTrue(chunked.readAll().hasPrefix("HTTP/1.1 413 "), "refused once the announced chunks pass the limit")

        let stalled = harness.connectClient()
        stalled.receive("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab")
        XCTAssertEqual(stalled.timeouts.read, .seconds(30), "the idle timeout bounds a body")
        stalled.end(.timeout)
        XCTAssertTrue(stalled.readAll().hasPrefix("HTTP/1.1 408 "))
        XCTAssertEqual(asked, 0, "no incomplete or oversized request reached the responder")
    }

    func testHeadLimitsAreTheServersAndConnectIsRefused() throws {
        let harness = try SessionHarness(limits: LocalServerLimits(maxHeadBytes: 256, maxFields: 3)) { request, respond in
            Self.echo(request, respond)
        }
        let big = harness.connectClient()
        big.receive("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 300))\r\n\r\n")
        XCTAssertTrue(big.readAll().hasPrefix("HTTP/1.1 431 "))
        let many = harness.connectClient()
        many.receive("GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n")
        XCTAssertTrue(many.readAll().hasPrefix("HTTP/1.1 431 "))
        let tunnel = harness.connectClient()
        tunnel.receive("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        XCTAssertTrue(tunnel.readAll().hasPrefix("HTTP/1.1 405 "))
        XCTAssertEqual(tunnel.ending, .closedAfterFlush)
        XCTAssertTrue(harness.backends.isEmpty, "nothing ever goes upstream")
    }

    func testAClientThatPipelinesWithoutReadingIsNotReadUntilItCatchesUp() throws {
        var asked = 0
        let big = [UInt8](repeating: 0x7A, count: 200 * 1024)
        let harness = try SessionHarness { _, respond in
            asked += 1
            respond(LocalResponse(status: 200, body: big))
        }
        let client = harness.connectClient()
        client.receive((0..<4).map { _ in "GET /m HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        XCTAssertEqual(asked, 2, "reading stops once the unread answers pass the high watermark")
        XCTAssertFalse(client.isReading)
        client.peerReads()
        XCTAssertEqual(asked, 4, "the rest is answered once the client took what was queued")
        client.peerReads()
        XCTAssertTrue(client.isReading, "and reading resumes once it caught up again")
    }

    func testAResponderThatNeverAnswersDoesNotHoldTheConnection() throws {
        let harness = try SessionHarness(limits: LocalServerLimits(idleTimeout: .seconds(5))) { _, _ in }
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("GET /stuck HTTP/1.1\r\nHost: x\r\n\r\n")
        client.end(.endOfStream)
        XCTAssertEqual(session.exchangeTimer.scheduledDelay, .seconds(5))
        session.exchangeTimer.expire()
        XCTAssertEqual(client.ending, .closed)
        XCTAssertEqual(harness.context.clientConnections, 0)
    }

    func testAnIdleConnectionClosesAtTheServersIdleTimeout() throws {
        let harness = try SessionHarness(limits: LocalServerLimits(idleTimeout: .seconds(4))) { request, respond in
            Self.echo(request, respond)
        }
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        XCTAssertEqual(session.headTimer.scheduledDelay, .seconds(4))
        session.headTimer.expire()
        XCTAssertEqual(client.ending, .closedAfterFlush)
    }
}
