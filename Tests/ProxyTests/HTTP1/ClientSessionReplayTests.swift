import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// Upstream 401s over in-memory streams (``SessionHarness``, ``RotatingCredential``): a replay
/// sends exactly the original request with the new token, in every body framing (the test
/// plays a backend that rejects a path's first token and echoes what it got for any other),
/// and a body past the resend limit gets its 401 at once and is sent once. (What a token
/// server sees when a backend rejects everything: ``UnauthorizedStormTests``.)
final class ClientSessionReplayTests: XCTestCase {
    private let body: [UInt8] = (0..<1024).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
    private let rejection = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\n"
        + "Content-Length: 25\r\n\r\n{\"error\":\"invalid_token\"}"

    /// The backend's echo of `request`: its body's length and digest and its Authorization.
    private func echo(_ request: MemoryRequest) -> String {
        let payload = "{\"method\": \"\(request.method)\", \"body_len\": \(request.body.count), "
            + "\"authorization\": \"\(request.headers("Authorization").first ?? "")\", "
            + "\"body_sha256\": \"\(sha256Hex(request.body))\"}"
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(payload.utf8.count)\r\n\r\n" + payload
    }

    private func assertReplayed(head: String, send wire: [[UInt8]], file: StaticString = #filePath, line: UInt = #line) throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        let client = harness.connectClient()
        let expectContinue = head.contains("Expect: 100-continue")
        client.receive(head)
        var seen: [MemoryRequest] = []
        // A short body is collected before the connection is taken; an expecting head goes on at once.
        var taken = harness.connectedBackend()?.peerReads() ?? []
        if expectContinue {
            // The backend answers the expectation (as the fixture backend does), then the body comes.
            try XCTUnwrap(harness.connectedBackend(), file: file, line: line).receive("HTTP/1.1 100 Continue\r\n\r\n")
            XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 100, file: file, line: line)
            client.clearDelivered()
        }
        for piece in wire {
            client.receive(piece)
            taken += harness.connectedBackend()?.peerReads() ?? []
        }
        XCTAssertEqual(harness.backends.count, 1, file: file, line: line)
        let first = try XCTUnwrap(harness.backends.first, file: file, line: line)
        seen += MemoryMessages.requests(taken)
        first.receive(rejection)
        XCTAssertEqual(harness.backends.count, 2, "the replay goes on a new connection", file: file, line: line)
        let second = try XCTUnwrap(harness.connectedBackend(), file: file, line: line)
        var replayed = second.peerReads()
        if String(decoding: replayed, as: UTF8.self).contains("Expect: 100-continue\r\n") {
            // The backend answers the replay's expectation too: the client already had its 100.
            second.receive("HTTP/1.1 100 Continue\r\n\r\n")
            replayed += second.peerReads()
        }
        let request = try XCTUnwrap(MemoryMessages.requests(replayed).first, file: file, line: line)
        seen.append(request)
        second.receive(echo(request))
        // Interim responses are skipped as a client does (the replay's own 100 Continue reaches
        // the client as a second one, which HTTP allows).
        let responses = MemoryMessages.responses(client.readAll()).filter { $0.status >= 200 }
        XCTAssertEqual(responses.count, 1, "one final response, never the 401: \(responses.map(\.status))",
                       file: file, line: line)
        let response = try XCTUnwrap(responses.last, file: file, line: line)
        XCTAssertEqual(response.status, 200, "replayed once with the new token", file: file, line: line)
        let echo = try XCTUnwrap(response.json, file: file, line: line)
        XCTAssertEqual(echo["body_len"] as? Int, 1024, file: file, line: line)
        XCTAssertEqual(echo["body_sha256"] as? String, sha256Hex(body), "exactly the original body", file: file, line: line)
        XCTAssertEqual(echo["authorization"] as? String, "Bearer tok-2", file: file, line: line)
        XCTAssertEqual(seen.count, 2, file: file, line: line)
        XCTAssertEqual(Set(seen.map { sha256Hex($0.body) }), [sha256Hex(body)], file: file, line: line)
        XCTAssertEqual(seen.map { $0.headers("Authorization") }, [["Bearer tok-1"], ["Bearer tok-2"]], file: file, line: line)
        XCTAssertEqual(harness.context.metrics.upstreamUnauthorized["api"], 1, file: file, line: line)
    }

    func testContentLengthBodyIsReplayedWhole() throws {
        try assertReplayed(head: "POST http://api.test/401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1024\r\n\r\n",
                           send: [Array(body[..<300]), Array(body[300...])])
    }

    func testChunkedBodyIsReplayedWhole() throws {
        var pieces: [[UInt8]] = []
        for start in stride(from: 0, to: 1024, by: 256) {
            pieces.append(Array("100\r\n".utf8) + Array(body[start..<start + 256]) + Array("\r\n".utf8))
        }
        pieces.append(Array("0\r\n\r\n".utf8))
        try assertReplayed(head: "POST http://api.test/401-once HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n",
                           send: pieces)
    }

    func testExpectContinueBodyIsReplayedWhole() throws {
        try assertReplayed(head: "POST http://api.test/401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1024\r\n"
                               + "Expect: 100-continue\r\n\r\n",
                           send: [body])
    }

    /// A body larger than what is kept for a resend (100 KiB) cannot be replayed: the 401 is
    /// passed on at once (no timer runs out first) and the backend got the request once.
    func testBodyPastTheResendLimitGetsThe401AtOnceAndIsSentOnce() throws {
        let credential = RotatingCredential()
        let harness = try SessionHarness(credential: credential)
        let client = harness.connectClient()
        let large = [UInt8](repeating: 0x62, count: 100 * 1024)
        client.receive("POST http://api.test/401-once HTTP/1.1\r\nHost: api.test\r\nContent-Length: \(large.count)\r\n\r\n")
        var taken: [UInt8] = []
        for offset in stride(from: 0, to: large.count, by: 16 * 1024) {
            client.receive(Array(large[offset..<min(offset + 16 * 1024, large.count)]))
            taken += harness.connectedBackend()?.peerReads() ?? []
        }
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertEqual(MemoryMessages.requests(taken).first?.body.count, large.count)
        backend.receive(rejection)
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 401, "passed through, never a partial replay")
        XCTAssertEqual(harness.backends.count, 1, "sent once")
        XCTAssertEqual(MemoryMessages.requests(taken).count, 1)
    }
}
