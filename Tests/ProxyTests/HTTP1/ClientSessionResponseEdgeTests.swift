import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A backend's response at its edges over in-memory streams (``SessionHarness``): bytes beyond
/// a response (after a body, after a HEAD, a 204 or a 304) never reach any client and retire
/// the connection, a broken chunked body is a 502 while nothing was sent, and a body that breaks
/// after its head was sent is a visible truncation.
final class ClientSessionResponseEdgeTests: XCTestCase {
    private func received(_ backend: MemoryStream) -> String { String(decoding: backend.peerReads(), as: UTF8.self) }

    /// The head and the body of what the client got.
    private func split(_ response: String) -> (head: String, body: String)? {
        guard let end = response.range(of: "\r\n\r\n") else { return nil }
        return (String(response[..<end.upperBound]), String(response[end.upperBound...]))
    }

    // MARK: - pool hygiene: nothing beyond a response reaches any client

    /// `request` is answered with `answer` (a response and stray bytes in one read); three
    /// other clients then each get their own answer from one new connection.
    private func assertNextClientsGetTheirOwnAnswers(after request: String, answer: String, expectStatus: Int,
                                                     file: StaticString = #filePath, line: UInt = #line) throws {
        let harness = try SessionHarness()
        let first = harness.connectClient()
        first.receive(request)
        let backend = try XCTUnwrap(harness.connectedBackend(), file: file, line: line)
        _ = received(backend)
        backend.receive(answer)
        let response = first.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 \(expectStatus) "), response, file: file, line: line)
        let body = try XCTUnwrap(split(response), file: file, line: line).body
        if !request.hasPrefix("HEAD") && expectStatus == 200 {
            XCTAssertEqual(body, "hello", file: file, line: line)
        } else {
            XCTAssertEqual(body, "", "a response without a body gets none", file: file, line: line)
        }
        // Other clients, the same upstream (one worker, one pool).
        for index in 0..<3 {
            let next = harness.connectClient()
            next.receive("GET http://api.test/ok?n=\(index) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let upstream = try XCTUnwrap(harness.connectedBackend(), file: file, line: line)
            XCTAssertTrue(received(upstream).hasPrefix("GET /ok?n=\(index) HTTP/1.1\r\n"), file: file, line: line)
            upstream.receive("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nfine /ok")
            let answer = next.readAll()
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200 "), "after \(request): \(answer)", file: file, line: line)
            XCTAssertEqual(split(answer)?.body, "fine /ok", "after \(request): a client must get its own answer", file: file, line: line)
        }
        XCTAssertEqual(backend.ending, .closed, "the connection that sent extra bytes is closed", file: file, line: line)
        XCTAssertEqual(harness.backends.count, 2, "the connection that sent extra bytes was discarded, the next one reused",
                       file: file, line: line)
        XCTAssertEqual(harness.context.metrics.upstreamDiscarded["backend.test:8080"], 1, file: file, line: line)
    }

    func testExtraResponseAfterContentLengthNeverReachesTheNextClient() throws {
        try assertNextClientsGetTheirOwnAnswers(
            after: "GET http://api.test/extra HTTP/1.1\r\nHost: api.test\r\n\r\n",
            answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nLEAKED",
            expectStatus: 200)
    }

    func testBodyAfterAHeadResponseIsDiscarded() throws {
        try assertNextClientsGetTheirOwnAnswers(after: "HEAD http://api.test/head-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                                answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", expectStatus: 200)
    }

    func testBodyAfterA304IsDiscarded() throws {
        try assertNextClientsGetTheirOwnAnswers(after: "GET http://api.test/304-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                                answer: "HTTP/1.1 304 Not Modified\r\n\r\nhello", expectStatus: 304)
    }

    func testBodyAfterA204IsDiscarded() throws {
        try assertNextClientsGetTheirOwnAnswers(after: "GET http://api.test/204-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                                answer: "HTTP/1.1 204 No Content\r\n\r\nhello", expectStatus: 204)
    }

    // MARK: - a malformed upstream body

    private func assert502(_ answer: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET http://api.test/bad HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend(), file: file, line: line)
        _ = received(backend)
        backend.receive(answer)
        let response = client.readAll()
        XCTAssertTrue(response.hasPrefix("HTTP/1.1 502 "), response, file: file, line: line)
        let (head, body) = try XCTUnwrap(split(response), file: file, line: line)
        XCTAssertTrue(head.contains("Proxy-Status: token-sidecar; error=http_protocol_error"), head, file: file, line: line)
        let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        XCTAssertEqual(json?["error"] as? String, "http_protocol_error", file: file, line: line)
        XCTAssertEqual(backend.ending, .closed, "a backend that broke its framing is not reused", file: file, line: line)
    }

    func testBadChunkSizeBeforeAnythingWasSentIs502() throws {
        try assert502("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
    }

    func testChunkDataWithoutCRLFBeforeAnythingWasSentIs502() throws {
        try assert502("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX")
    }

    // MARK: - a body that breaks after its head was sent

    /// Once the head went to the client, a broken body can no longer become a 502: the client
    /// gets the head (its framing as the backend sent it), what came intact, and a close, never a
    /// clean end — a malformed chunk later on, or a backend that closes short of its
    /// Content-Length.
    func testABodyThatBreaksAfterItsHeadWasSentIsAVisibleTruncation() throws {
        let cases: [(start: String, framing: String, breaks: (MemoryStream) -> Void, body: String)] = [
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "Transfer-Encoding: chunked\r\n",
             { $0.receive("zz\r\nmore\r\n") }, "5\r\nhello\r\n"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", "Content-Length: 100\r\n",
             { $0.end(.endOfStream) }, "0123456789"),
        ]
        for (start, framing, breaks, expected) in cases {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET http://api.test/late HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = received(backend)
            backend.receive(start)
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 200 OK\r\n"), "the head went out: \(framing)")
            breaks(backend)
            let (head, body) = try XCTUnwrap(split(client.readAll()))
            XCTAssertTrue(head.contains(framing), head)
            XCTAssertEqual(body, expected, "what came intact, and no end of the body: a visible truncation")
            XCTAssertEqual(client.ending, .closedAfterFlush, "the connection is closed: \(framing)")
            XCTAssertEqual(backend.ending, .closed, framing)
        }
    }

    // MARK: - interim heads

    /// A `100 Continue` and the final head after it, split at every byte across two reads: the
    /// client gets the interim head, then the final response, alike every time.
    func testAnInterimAndAFinalHeadSplitAtEveryByteAreRelayedAlike() throws {
        let answer = Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        for cut in 1..<answer.count {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = received(backend)
            backend.receive(Array(answer[..<cut]))
            backend.receive(Array(answer[cut...]))
            let got = client.readAll()
            XCTAssertTrue(got.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), "cut at \(cut): \(got)")
            XCTAssertTrue(got.hasSuffix("\r\n\r\nok"), "cut at \(cut): \(got)")
            XCTAssertEqual(harness.pooled("idle"), 1, "cut at \(cut): the connection goes back to the pool")
        }
    }

    /// A backend that sends an interim head and then closes, or closes inside the final head
    /// after it: a 502 (nothing final was sent), the connection never pooled.
    func testABackendThatClosesAfterAnInterimHeadIs502() throws {
        for rest in ["", "HTTP/1.1 200 OK\r\nContent-Le"] {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            client.receive("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            _ = received(backend)
            backend.receive("HTTP/1.1 100 Continue\r\n\r\n" + rest)
            backend.end(.endOfStream)
            let got = client.readAll()
            XCTAssertTrue(got.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 502 "), "after \(rest.debugDescription): \(got)")
            XCTAssertEqual(harness.pooled("idle"), 0)
        }
    }
}
