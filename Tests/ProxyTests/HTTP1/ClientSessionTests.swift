@_spi(Testing) import EventLoop
import TestSupport
import XCTest
@testable import Proxy

/// The client session over in-memory streams (``SessionHarness``): no socket, no sleep. The test
/// plays the client and the backend byte by byte, and jumps the clock to each deadline. These
/// are the edges that were bugs before, each run in milliseconds.
final class ClientSessionTests: XCTestCase {
    private let get = "GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\nUser-Agent: t\r\nAuthorization: Bearer app-own\r\n\r\n"

    /// The request the backend received, as text (taking what is queued).
    private func received(_ backend: MemoryStream) -> String {
        String(decoding: backend.peerReads(), as: UTF8.self)
    }

    // MARK: - the path

    func testARequestReachesTheBackendWithTheTokenAndTheResponseComesBack() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        XCTAssertEqual(harness.backends.count, 1, "a connection was opened for the request")
        XCTAssertEqual(harness.targets.first?.host, "backend.test")
        let backend = try XCTUnwrap(harness.connectedBackend())
        let request = received(backend)
        XCTAssertTrue(request.hasPrefix("GET /x HTTP/1.1\r\n"), request)
        XCTAssertTrue(request.contains("Authorization: Bearer tok-1\r\n"))
        XCTAssertFalse(request.contains("app-own"), "the app's own Authorization is replaced")
        XCTAssertTrue(request.contains("Via: 1.1 token-sidecar\r\n"))
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n"), response)
        XCTAssertTrue(response.hasSuffix("\r\n\r\nhello"), response)
        XCTAssertEqual(harness.pooled("idle"), 1, "a complete response gives the connection back")
        XCTAssertEqual(client.ending, .open, "keep-alive")
    }

    func testPipelinedRequestsAreAnsweredInOrderOnOneConnection() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get + get.replacingOccurrences(of: "/x", with: "/y"))
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(received(backend).hasPrefix("GET /x "), "the second request waits for the first response")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        XCTAssertTrue(received(backend).hasPrefix("GET /y "), "then goes on the same pooled connection")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2")
        let response = client.readAll()
        XCTAssertTrue(response.range(of: "\r\n\r\n1")!.lowerBound < response.range(of: "\r\n\r\n2")!.lowerBound, response)
        XCTAssertEqual(harness.backends.count, 1)
    }

    // MARK: - bytes split anywhere

    /// The request head split at every byte (and the response head too) is read exactly as
    /// when it arrives whole: the backend sees the same bytes, the client the same answer.
    func testAHeadSplitAtEveryByteIsReadAlike() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        let head = Array(get.utf8)
        let responseHead = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok".utf8)
        var expectedRequest: String?
        var expectedResponse: String?
        for split in 1..<head.count {
            client.clearDelivered()
            client.receive(Array(head[..<split]))
            client.receive(Array(head[split...]))
            let backend = try XCTUnwrap(harness.connectedBackend())
            let request = received(backend)
            if let expectedRequest { XCTAssertEqual(request, expectedRequest, "request split at \(split)") } else { expectedRequest = request }
            let responseSplit = 1 + split % (responseHead.count - 1)
            backend.receive(Array(responseHead[..<responseSplit]))
            backend.receive(Array(responseHead[responseSplit...]))
            let response = client.readAll()
            if let expectedResponse { XCTAssertEqual(response, expectedResponse, "response split at \(responseSplit)") } else { expectedResponse = response }
        }
        XCTAssertEqual(harness.backends.count, 1, "every exchange completed cleanly and reused the connection")
    }

    func testAMalformedHeadIsA400AndACloseAndReachesNoBackend() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 400 "), response)
        XCTAssertTrue(response.contains("Proxy-Status: token-sidecar; error="), response)
        XCTAssertEqual(client.ending, .closedAfterFlush)
        XCTAssertTrue(harness.backends.isEmpty)
    }

    // MARK: - a backend that sends too much or leaves

    func testBytesBeyondAResponseNeverReachTheNextRequest() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let first = try XCTUnwrap(harness.connectedBackend())
        first.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforged")
        XCTAssertTrue(client.readAll().hasSuffix("\r\n\r\nhi"))
        XCTAssertEqual(first.ending, .closed, "the connection that sent extra bytes is discarded, never pooled")
        XCTAssertEqual(harness.context.metrics.upstreamDiscarded.values.reduce(0, +), 1)
        client.clearDelivered()
        client.receive(get)
        XCTAssertEqual(harness.backends.count, 2, "the next request gets a new connection")
        let second = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(received(second).hasPrefix("GET /x "))
        second.receive("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nmine")
        let response = client.readAll()
        XCTAssertTrue(response.hasSuffix("\r\n\r\nmine"), response)
        XCTAssertFalse(response.contains("forged"))
    }

    func testABackendThatClosesBeforeItsHeadIsA502() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        backend.receive("HTTP/1.1 200 O")
        backend.end(.endOfStream)
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 502 "), response)
        XCTAssertTrue(response.contains("Proxy-Status: token-sidecar; error="), response)
        XCTAssertEqual(backend.ending, .closed)
    }

    func testABackendThatClosesMidBodyTruncatesTheResponse() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        backend.end(.endOfStream)
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n") && response.hasSuffix("\r\n\r\nabc"), response)
        XCTAssertEqual(client.ending, .closedAfterFlush, "the client sees a short body and a close, never a clean end")
    }

    func testACloseDelimitedBodyEndsWithTheBackendsCloseAsAChunkedOne() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        backend.receive("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close")
        backend.end(.endOfStream)
        let response = client.readAll()
        XCTAssertTrue(response.contains("Transfer-Encoding: chunked\r\n"), response)
        XCTAssertTrue(response.hasSuffix("\r\n\r\nb\r\nuntil-close\r\n0\r\n\r\n"), response)
        XCTAssertEqual(client.ending, .open, "a complete message: the client connection stays")
    }

    /// A refused response head (malformed, a bare CR, or cut short by the response timer) ends
    /// that exchange with a 502 or 504, and the client's next request is read and answered
    /// afresh: nothing of the refused head is part of how the next response is scanned.
    func testAfterARefusedResponseHeadTheNextResponseIsReadAfresh() throws {
        let refusals = ["HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                        "HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n",
                        "HTTP/1.1 200 OK\r\nX-Partial: "]
        for refusal in refusals {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            let session = try XCTUnwrap(harness.session(of: client))
            client.receive(get)
            let first = try XCTUnwrap(harness.connectedBackend())
            first.receive(refusal)
            if refusal.hasSuffix(": ") { session.exchangeTimer.expire() }
            let answer = client.readAll()
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 502 ") || answer.hasPrefix("HTTP/1.1 504 "), answer)
            XCTAssertEqual(client.ending, .open, "a complete keep-alive request keeps its connection")
            client.clearDelivered()
            client.receive(get)
            let second = try XCTUnwrap(harness.connectedBackend())
            XCTAssertFalse(second === first)
            second.receive("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
            let response = client.readAll()
            XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n") && response.hasSuffix("\r\n\r\nfresh"),
                          "after \(refusal.debugDescription): \(response)")
        }
    }

    func testAnUnrequestedSwitchOfProtocolsIsA502() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        backend.receive("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 502 "))
    }

    // MARK: - a client that leaves

    /// In every phase of an exchange, a client that leaves ends the backend side at once: a
    /// connect in progress is dropped, a connection carrying the request is reset. (A request
    /// sent whole whose head has not come, or a response of known length with at most 1 MiB
    /// left, is drained instead to keep its connection: ``ClientSessionClientAbortTests``; the
    /// response here is chunked, a stream.)
    func testAClientThatLeavesInEachPhaseAbortsTheBackendSide() throws {
        for phase in ["connecting", "relaying", "uploading"] {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            if phase == "uploading" {
                client.receive("POST http://api.test/u HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000\r\n\r\n")
                client.receive(Array(repeating: 0x61, count: 70_000))
            } else {
                client.receive(get)
            }
            let backend = try XCTUnwrap(harness.backends.last, phase)
            if phase != "connecting" { backend.connect() }
            if phase == "relaying" { backend.receive("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npart\r\n") }
            client.end(.endOfStream)
            XCTAssertEqual(backend.ending, phase == "connecting" ? .closed : .reset, phase)
            XCTAssertEqual(client.ending, .closed, phase)
            XCTAssertEqual(harness.pooled("idle") + harness.pooled("active"), 0, phase)
        }
    }

    // MARK: - 401 replay

    func testA401IsReplayedWithTheWholeBodyAndTheNewToken() throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        let client = harness.connectClient()
        client.receive("POST http://api.test/p HTTP/1.1\r\nHost: api.test\r\nContent-Length: 6\r\n\r\nab")
        client.receive("cdef")
        let first = try XCTUnwrap(harness.connectedBackend())
        let sent = received(first)
        XCTAssertTrue(sent.contains("Authorization: Bearer tok-1\r\n") && sent.hasSuffix("\r\n\r\nabcdef"), sent)
        first.receive("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(credential.rejections, 1)
        XCTAssertEqual(harness.backends.count, 2, "the replay goes on a new connection")
        let second = try XCTUnwrap(harness.connectedBackend())
        let replayed = received(second)
        XCTAssertTrue(replayed.contains("Authorization: Bearer tok-2\r\n"), replayed)
        XCTAssertEqual(replayed.replacingOccurrences(of: "tok-2", with: "tok-1"), sent, "exactly the original request")
        second.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n") && !response.contains("401"), response)
        XCTAssertEqual(credential.acceptedTokens, ["tok-2"], "the new token's success is reported (it ends any backoff)")
    }

    func testASecond401IsPassedOnNotReplayedAgain() throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        let client = harness.connectClient()
        client.receive(get)
        try XCTUnwrap(harness.connectedBackend()).receive("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        try XCTUnwrap(harness.connectedBackend()).receive("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 401 "))
        XCTAssertEqual(harness.backends.count, 2, "one replay per request")
    }

    // MARK: - a client that falls behind

    /// The client reads nothing: the response goes to the spool, the backend connection goes
    /// back to the pool as soon as the backend is done, and the client later gets every byte
    /// in order.
    func testASlowClientsResponseIsSpooledAndTheBackendReleased() throws {
        let harness = try SessionHarness(spoolBytes: 64 * 1024 * 1024)
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = received(backend)
        let body = (0..<(2 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        backend.receive(Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
        for offset in stride(from: 0, to: body.count, by: 100_000) {
            backend.receive(Array(body[offset..<min(offset + 100_000, body.count)]))
        }
        XCTAssertEqual(harness.context.metrics.spooledResponses, 1)
        XCTAssertEqual(harness.pooled("idle"), 1, "the backend is done: its connection is back in the pool")
        XCTAssertEqual(backend.ending, .open)
        XCTAssertLessThanOrEqual(client.output.count, WorkerContext.highWatermark + 64 * 1024, "memory holds a window, the disk the rest")
        var taken: [UInt8] = []
        while taken.count < body.count + 100 {
            let chunk = client.peerReads(max: 50_000)
            if chunk.isEmpty { break }
            taken += chunk
        }
        let headEnd = try XCTUnwrap(taken.firstRange(of: Array("\r\n\r\n".utf8))).upperBound
        XCTAssertEqual(taken.count - headEnd, body.count)
        XCTAssertTrue(Array(taken[headEnd...]) == body, "every byte, in order")
        XCTAssertEqual(harness.context.spoolBudget.inUse, 0, "a delivered spool gives its budget back")
    }

    func testWithoutSpoolRoomASlowClientPausesTheBackend() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        backend.receive(Array(repeating: 0x62, count: 400_000))
        XCTAssertFalse(backend.isReading, "the client fell behind and nothing can be spooled")
        XCTAssertEqual(harness.pooled("active"), 1)
        client.peerReads()
        XCTAssertTrue(backend.isReading, "the client caught up")
    }

    /// Hundreds of slow readers must not each hold a full window: once the process's buffer
    /// budget is spent, relays fill a client's output (and read the backend ahead) only
    /// ``BufferBudget/floor`` bytes, until a client that catches up gives its bytes back.
    func testOnceTheBufferBudgetIsSpentSlowClientsGetSmallWindowsUntilItIsGivenBack() throws {
        let harness = try SessionHarness(bufferBytes: 200 * 1024)
        let budget = harness.context.bufferBudget
        let piece = [UInt8](repeating: 0x62, count: 4096)
        /// A client asking for 4 MiB that reads nothing; the backend sends until it is paused.
        func slowReader() throws -> (client: MemoryStream, backend: MemoryStream) {
            let client = harness.connectClient()
            client.receive(get)
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = received(backend)
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n")
            for _ in 0..<1000 where backend.isReading { backend.receive(piece) }
            XCTAssertFalse(backend.isReading, "the backend is paused for a client that does not read")
            return (client, backend)
        }
        let first = try slowReader()
        XCTAssertGreaterThan(first.client.output.count, 200 * 1024, "a full window while the budget had room")
        XCTAssertEqual(budget.inUse, first.client.output.count - BufferBudget.floor, "what is queued beyond the floor is counted")

        let second = try slowReader()
        XCTAssertLessThanOrEqual(second.client.output.count, BufferBudget.floor + piece.count, "the budget is spent: a small window")
        XCTAssertEqual(second.backend.readHighWatermark, BufferBudget.floor, "and a small read-ahead from its backend")

        first.client.peerReads()
        XCTAssertEqual(budget.inUse, max(0, second.client.output.count - BufferBudget.floor),
                       "a client that caught up gives its bytes back (what is left is the second one's)")
        second.client.peerReads()
        XCTAssertEqual(second.backend.readHighWatermark, WorkerContext.readAhead, "with room again, full windows")
        for _ in 0..<100 where second.backend.isReading { second.backend.receive(piece) }
        XCTAssertGreaterThan(second.client.output.count, 200 * 1024)

        // A chunked response whose trailers are read whole (up to 66 KiB) is never read ahead
        // less than that, whatever the budget.
        let chunked = harness.connectClient()
        chunked.receive(get)
        let chunkedBackend = try XCTUnwrap(harness.connectedBackend())
        _ = received(chunkedBackend)
        XCTAssertGreaterThanOrEqual(budget.inUse, 200 * 1024, "the budget is spent again")
        chunkedBackend.receive("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n")
        XCTAssertEqual(chunkedBackend.readHighWatermark, BufferBudget.chunkedFloor)
        XCTAssertGreaterThan(BufferBudget.chunkedFloor, 66 * 1024)

        first.client.end(.endOfStream)
        second.client.end(.endOfStream)
        chunked.end(.endOfStream)
        XCTAssertEqual(budget.inUse, 0, "sessions that end hold nothing")
        XCTAssertGreaterThan(budget.takeReleased(), 150 * 1024, "what was given back is reported once, for the heap trim")
        XCTAssertEqual(budget.takeReleased(), 0)
    }

    /// With the budget spent from the start (every relay in 16 KiB steps), a broken backend is
    /// handled as with full windows: a body split at odd sizes arrives whole and in order to a
    /// client reading in small pieces, bytes beyond it are never relayed, the reused connection
    /// reads its next head with the full read-ahead, and a close mid-body truncates.
    func testSmallWindowsKeepEveryEdgeOfTheRelay() throws {
        let harness = try SessionHarness(bufferBytes: 0)
        let client = harness.connectClient()
        client.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = received(backend)
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 10) }
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n")
        XCTAssertEqual(backend.readHighWatermark, BufferBudget.floor, "the body is read ahead in small steps")
        var taken: [UInt8] = []
        var offset = 0
        for size in [1, 4095, 16_384, 3, 30_000, 777] where offset < body.count {
            let end = min(offset + size, body.count)
            backend.receive(Array(body[offset..<end]))
            offset = end
            XCTAssertLessThanOrEqual(client.output.count, BufferBudget.floor + 30_000, "never more than a window and a piece")
            taken += client.peerReads(max: 5_000)
        }
        // The rest at once with bytes beyond the body (an overrun): the body ends where it says.
        backend.receive(Array(body[offset...]) + Array("HTTP/1.1 200 OK\r\n\r\nforged".utf8))
        while true {
            let chunk = client.peerReads(max: 5_000)
            if chunk.isEmpty { break }
            taken += chunk
        }
        let headEnd = try XCTUnwrap(taken.firstRange(of: Array("\r\n\r\n".utf8))).upperBound
        XCTAssertTrue(Array(taken[headEnd...]) == body, "every byte, in order, nothing beyond")
        XCTAssertEqual(backend.ending, .closed, "a connection that overran is discarded")
        XCTAssertEqual(harness.context.bufferBudget.inUse, 0)

        client.clearDelivered()
        client.receive(get)
        let next = try XCTUnwrap(harness.connectedBackend())
        _ = received(next)
        next.receive("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertTrue(client.readAll().hasSuffix("\r\n\r\nabc"))
        client.clearDelivered()
        client.receive(get)
        XCTAssertTrue(received(next).hasPrefix("GET /x "), "the pooled connection is reused")
        XCTAssertEqual(next.readHighWatermark, WorkerContext.readAhead, "its next head is read with the full read-ahead")
        next.receive("HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n" + String(repeating: "x", count: 20_000))
        next.end(.endOfStream)
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 200 OK\r\n"), response)
        XCTAssertTrue(response.hasSuffix("\r\n\r\n" + String(repeating: "x", count: 20_000)), "the 20,000 bytes that came")
        XCTAssertEqual(client.ending, .closedAfterFlush, "a body cut short ends with a close, never a clean end")
    }

    /// At the connection limit, a request that must queue takes the connection of the client
    /// that stopped reading first: that response is cut short (a reset, never a clean end), and
    /// the waiting request is served at once, not after `connect`.
    func testAQueuedRequestTakesTheConnectionOfTheClientThatStoppedReadingFirst() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1")
        let slow = harness.connectClient()
        slow.receive(get)
        let first = try XCTUnwrap(harness.connectedBackend())
        _ = received(first)
        first.receive("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        first.receive(Array(repeating: 0x63, count: 400_000))
        XCTAssertFalse(first.isReading, "paused on its client: the connection is held")
        let other = harness.connectClient()
        other.receive(get)
        XCTAssertEqual(harness.context.metrics.stalledClientsCut, 1)
        XCTAssertEqual(first.ending, .reset, "the stalled response gave its connection up")
        XCTAssertEqual(slow.ending, .closed, "its client sees the response cut short")
        XCTAssertEqual(harness.backends.count, 2, "the freed slot serves the queued request")
        let second = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(received(second).hasPrefix("GET /x "))
        second.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertTrue(other.readAll().hasSuffix("\r\n\r\nok"))
    }

    /// Requests queued at the connection limit, with a body staged and without, each reach the
    /// backend in turn with exactly their own body (those without one share the worker's empty
    /// buffer: nothing of another request's body may show up in theirs).
    func testQueuedRequestsWithAndWithoutABodyEachSendOnlyTheirOwn() throws {
        let harness = try SessionHarness(top: "maxConnectionsPerUpstream: 1")
        let holder = harness.connectClient()
        holder.receive(get)
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(received(backend).hasPrefix("GET /x "))
        let post = { (body: String) in
            "POST http://api.test/p HTTP/1.1\r\nHost: api.test\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        }
        let first = harness.connectClient()
        first.receive(post("hello"))
        let bodiless = harness.connectClient()
        bodiless.receive(get)
        let second = harness.connectClient()
        second.receive(post("world!"))
        XCTAssertEqual(harness.backends.count, 1, "all three queued behind the one connection")
        XCTAssertEqual(received(backend), "", "nothing sent for them yet")

        var expected: [(MemoryStream, String)] = [(first, "hello"), (bodiless, ""), (second, "world!")]
        var answering = holder
        while true {
            backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            XCTAssertTrue(answering.readAll().hasSuffix("\r\n\r\nok"))
            guard !expected.isEmpty else { break }
            let (client, body) = expected.removeFirst()
            let request = received(backend)
            XCTAssertTrue(request.hasSuffix("\r\n\r\n" + body), "the queued request's own body, whole: \(request)")
            answering = client
        }
        XCTAssertEqual(harness.backends.count, 1, "one connection served them all, in turn")
    }

    // MARK: - deadlines (the clock jumps; nothing sleeps)

    func testAnIdleConnectionClosesAtTheIdleTimeout() throws {
        let harness = try SessionHarness(top: "timeouts: {idle: 7s}")
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        XCTAssertTrue(session.headTimer.isScheduled)
        XCTAssertEqual(session.headTimer.scheduledDelay, .seconds(7))
        session.headTimer.expire()
        XCTAssertEqual(client.readAll(), "", "an idle close says nothing")
        XCTAssertEqual(client.ending, .closedAfterFlush)
    }

    func testAHeadThatDoesNotCompleteGets408() throws {
        let harness = try SessionHarness(top: "timeouts: {clientHeader: 3s}")
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive("GET http://api.test/ HT")
        XCTAssertEqual(session.headTimer.scheduledDelay, .seconds(3))
        session.headTimer.expire()
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 408 "))
        XCTAssertEqual(client.ending, .closedAfterFlush)
        XCTAssertTrue(harness.backends.isEmpty)
    }

    func testNoResponseHeadInTimeIs504() throws {
        let harness = try SessionHarness(top: "timeouts: {responseHeaders: 9s}")
        let client = harness.connectClient()
        let session = try XCTUnwrap(harness.session(of: client))
        client.receive(get)
        XCTAssertFalse(session.exchangeTimer.isScheduled, "connecting is timed by connect, not responseHeaders")
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(session.exchangeTimer.isScheduled)
        XCTAssertEqual(session.exchangeTimer.scheduledDelay, .seconds(9))
        session.exchangeTimer.expire()
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 504 "))
        XCTAssertEqual(backend.ending, .closed, "a backend that did not answer is not reused")
    }

    func testAClientThatStopsSendingItsBodyGets408() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("POST http://api.test/u HTTP/1.1\r\nHost: api.test\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertTrue(harness.backends.isEmpty, "a body being collected holds no backend connection")
        XCTAssertEqual(client.timeouts.read, .seconds(60), "bodyIdle bounds the wait")
        client.end(.timeout)
        XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 408 "))
    }
}
