import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A route with a placement (`inject: {header: x-api-key}`) at the edges of an exchange, over
/// in-memory streams: a head and a chunked body split into single bytes, a client that leaves
/// mid-body (past the part collected before a backend is taken), a backend that closes before answering or mid-response, and one that sends more
/// than its response. The edited head changes none of what happens at each phase.
final class ClientSessionPlacementEdgeTests: XCTestCase {
    private func harness() throws -> SessionHarness { try SessionHarness(route: ["inject: {header: x-api-key}"]) }

    private let head = "POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: app-own\r\nTransfer-Encoding: chunked\r\n\r\n"

    func testAHeadAndBodySplitIntoSingleBytesArriveEditedAndWhole() throws {
        let harness = try harness()
        let client = harness.connectClient()
        for byte in Array((head + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").utf8) { client.receive([byte]) }
        let backend = try XCTUnwrap(harness.connectedBackend())
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests.first?.headers("x-api-key"), ["tok-1"], "the token at its place, the app's own removed")
        XCTAssertEqual(requests.first?.headers("Authorization"), [])
        XCTAssertEqual(requests.first.map { String(decoding: $0.body, as: UTF8.self) }, "hello world")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(MemoryMessages.response(client.readAll()).status, 200)
    }

    func testAClientThatLeavesMidBodyResetsTheBackendRequest() throws {
        for end in [ConnectionEnd.endOfStream, .socketError(errno: ECONNRESET)] {
            let harness = try harness()
            let client = harness.connectClient()
            // Past the 64 KiB collected before a backend is taken (a shorter body never takes one).
            client.receive(head + "11170\r\n")
            client.receive([UInt8](repeating: 0x61, count: 66_000))
            let backend = try XCTUnwrap(harness.connectedBackend())
            let sent = String(decoding: backend.peerReads(), as: UTF8.self)
            XCTAssertTrue(sent.contains("x-api-key: tok-1\r\n") && !sent.contains("app-own"), sent)
            client.end(end)
            XCTAssertEqual(backend.ending, .reset, "never an upload that looks complete (\(end))")
            XCTAssertEqual(harness.pooled("idle"), 0)
        }
    }

    func testABackendThatClosesEarlyOrMidResponseOrOverrunsIsNeverReused() throws {
        // Closed before any answer: 502 with Proxy-Status, the edited request not sent twice (a POST).
        let early = try harness()
        let client = early.connectClient()
        client.receive(head + "0\r\n\r\n")
        let backend = try XCTUnwrap(early.connectedBackend())
        _ = backend.peerReads()
        backend.end(.endOfStream)
        let refused = MemoryMessages.response(client.readAll())
        XCTAssertEqual(refused.status, 502)
        XCTAssertTrue(refused.headers.contains { $0.name.lowercased() == "proxy-status" }, "\(refused.headers)")
        XCTAssertEqual(early.targets.count, 1, "a POST is never sent twice")

        // Closed mid-response: the client sees a truncated message, not a clean one.
        let middle = try harness()
        let truncated = middle.connectClient()
        truncated.receive("GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let half = try XCTUnwrap(middle.connectedBackend())
        half.receive("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        half.end(.endOfStream)
        XCTAssertTrue(truncated.readAll().hasSuffix("half"))
        XCTAssertNotEqual(truncated.ending, .open, "closed short of its length")

        // More than the response: the connection is discarded, the extra bytes reach nobody.
        let overrun = try harness()
        let request = try overrun.forward("GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: app-own\r\n\r\n", from: overrun.connectClient())
        XCTAssertEqual(request.headers("x-api-key"), ["tok-1"])
        let extra = overrun.connectClient()
        extra.receive("GET http://api.test/y HTTP/1.1\r\nHost: api.test\r\n\r\n")
        overrun.backends.first?.receive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nSMUGGLED")
        XCTAssertFalse(extra.readAll().contains("SMUGGLED"))
    }
}
