import Foundation
import Proxy
import TestSupport
import XCTest

/// The exchange at its edges, against a backend that misbehaves on purpose: bytes beyond a
/// response, broken chunked bodies, clients that leave mid-transfer.
final class ExchangeEdgeTests: XCTestCase {
    private func proxy(_ backend: MisbehavingBackend, extra: String = "") throws -> ProxyHarness {
        try ProxyHarness(yaml: ProxyHarness.yaml(backendPort: backend.port) + extra)
    }

    // MARK: - pool hygiene: nothing beyond a response reaches any client

    private func assertNextClientGetsItsOwnAnswer(after request: String, path: String, expectStatus: Int,
                                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let first = try RawClient(port: proxy.port)
        first.send(request)
        let answer = try first.readResponse(head: request.hasPrefix("HEAD"))
        XCTAssertEqual(answer.status, expectStatus, file: file, line: line)
        if !request.hasPrefix("HEAD") && expectStatus == 200 { XCTAssertEqual(answer.text, "hello", file: file, line: line) }
        // Another client, another connection, the same upstream (workers: 1, one pool).
        for index in 0..<3 {
            let next = try RawClient(port: proxy.port)
            next.send("GET /ok?n=\(index) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let response = try next.readResponse()
            XCTAssertEqual(response.status, 200, "after \(path)", file: file, line: line)
            XCTAssertEqual(response.text, "fine /ok", "after \(path): a client must get its own answer", file: file, line: line)
        }
        XCTAssertEqual(backend.connections(), 2, "the connection that sent extra bytes was discarded, the next one reused",
                       file: file, line: line)
        let metrics = proxy.metrics()
        XCTAssertEqual(metrics.upstreamDiscarded["127.0.0.1:\(backend.port)"], 1, file: file, line: line)
    }

    func testExtraResponseAfterContentLengthNeverReachesTheNextClient() throws {
        try assertNextClientGetsItsOwnAnswer(after: "GET /extra HTTP/1.1\r\nHost: api.test\r\n\r\n", path: "/extra", expectStatus: 200)
    }

    func testBodyAfterAHeadResponseIsDiscarded() throws {
        try assertNextClientGetsItsOwnAnswer(after: "HEAD /head-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                             path: "/head-with-body", expectStatus: 200)
    }

    func testBodyAfterA304IsDiscarded() throws {
        try assertNextClientGetsItsOwnAnswer(after: "GET /304-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                             path: "/304-with-body", expectStatus: 304)
    }

    func testBodyAfterA204IsDiscarded() throws {
        try assertNextClientGetsItsOwnAnswer(after: "GET /204-with-body HTTP/1.1\r\nHost: api.test\r\n\r\n",
                                             path: "/204-with-body", expectStatus: 204)
    }

    // MARK: - a malformed upstream body

    private func assert502(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port)
        client.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 502, file: file, line: line)
        XCTAssertTrue(response.header("proxy-status")?.contains("error=http_protocol_error") ?? false, file: file, line: line)
        XCTAssertEqual(response.json?["error"] as? String, "http_protocol_error", file: file, line: line)
    }

    func testBadChunkSizeBeforeAnythingWasSentIs502() throws {
        try assert502("/bad-chunk-size")
    }

    func testChunkDataWithoutCRLFBeforeAnythingWasSentIs502() throws {
        try assert502("/bad-chunk-crlf")
    }

    func testMalformedChunkAfterBytesWereSentTruncatesTheResponse() throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port, timeout: 5)
        client.send("GET /bad-chunk-late HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let head = try client.readResponse(head: true)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("transfer-encoding")?.lowercased(), "chunked")
        let rest = String(decoding: client.readAll(), as: UTF8.self)
        XCTAssertTrue(client.peerClosed, "the connection is closed")
        XCTAssertEqual(rest, "5\r\nhello\r\n", "the first chunk arrives, and no terminating chunk: a visible truncation")
    }

    func testBackendClosingShortOfContentLengthTruncates() throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port, timeout: 5)
        client.send("GET /short-cl-close HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let head = try client.readResponse(head: true)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("content-length"), "100")
        XCTAssertEqual(client.readAll(), Array("0123456789".utf8))
        XCTAssertTrue(client.peerClosed)
    }

    // MARK: - a client that leaves stops the transfer

    private func assertUpstreamClosesWhenTheClientLeaves(_ path: String, readHead: Bool, reset: Bool,
                                                         file: StaticString = #filePath, line: UInt = #line) throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port)
        client.send("GET \(path) HTTP/1.1\r\nHost: api.test\r\n\r\n")
        if readHead {
            XCTAssertEqual(try client.readResponse(head: true).status, 200, file: file, line: line)
            // /trickle: read its whole first chunk, so the close is a clean FIN (a socket closed with
            // unread bytes sends a reset instead); /infinite: read a little of a flood.
            _ = try client.receive(count: path == "/trickle" ? 6 + 16384 + 2 : 1024)
        } else {
            XCTAssertTrue(eventually { backend.requests(path: path).count == 1 }, file: file, line: line)
            Thread.sleep(forTimeInterval: 0.2)
        }
        let left = Date().timeIntervalSince1970
        client.close(reset: reset)
        let closed = try XCTUnwrap(backend.closedAt(path: path, within: 3), "the backend request outlived its client", file: file, line: line)
        print("upstream closed \(Int((closed - left) * 1000)) ms after the client \(reset ? "reset" : "closed") (\(path))")
        XCTAssertLessThan(closed - left, 0.5, file: file, line: line)
    }

    func testClientCloseStopsADownload() throws {
        try assertUpstreamClosesWhenTheClientLeaves("/trickle", readHead: true, reset: false)
        try assertUpstreamClosesWhenTheClientLeaves("/infinite", readHead: true, reset: false)
    }

    func testClientResetStopsADownload() throws {
        try assertUpstreamClosesWhenTheClientLeaves("/trickle", readHead: true, reset: true)
    }

    func testClientCloseAbortsARequestWaitingForItsResponse() throws {
        try assertUpstreamClosesWhenTheClientLeaves("/hang", readHead: false, reset: false)
    }

    func testClientCloseStopsTheUpload() throws {
        for reset in [false, true] {
            let backend = try MisbehavingBackend()
            let proxy = try proxy(backend)
            let client = try RawClient(port: proxy.port)
            client.send("POST /slow-upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 50000000\r\n\r\n")
            client.send([UInt8](repeating: 0x61, count: 1024 * 1024))
            XCTAssertTrue(eventually { proxy.upstreamConnections() == 1 })
            Thread.sleep(forTimeInterval: 0.2)  // the proxy is paused: the backend reads slowly
            let left = Date()
            client.close(reset: reset)
            // The backend itself notices only after reading what is already in its socket buffer,
            // so the proxy's own count of open upstream connections is the witness here.
            XCTAssertTrue(eventually(timeout: 2) { proxy.upstreamConnections() == 0 }, "the upstream request was not aborted")
            let elapsed = Date().timeIntervalSince(left)
            print("upstream connection closed \(Int(elapsed * 1000)) ms after the uploading client \(reset ? "reset" : "closed")")
            XCTAssertLessThan(elapsed, 0.5)
        }
    }

    func testClientResetWhileItsUploadIsPausedAbortsTheUpstream() throws {
        let backend = try MisbehavingBackend()
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port)
        client.setSendTimeout(1)
        client.send("POST /stall HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000000\r\n\r\n")
        // The backend reads nothing: its socket buffers fill, the proxy's output reaches its
        // watermark, the proxy stops reading the client, and this send gives up after 1 s.
        client.send([UInt8](repeating: 0x61, count: 64 * 1024 * 1024))
        XCTAssertEqual(proxy.upstreamConnections(), 1)
        let left = Date()
        client.close(reset: true)
        XCTAssertTrue(eventually(timeout: 3) { proxy.upstreamConnections() == 0 },
                      "a client that left while its upload was paused must not keep the backend request open")
        let elapsed = Date().timeIntervalSince(left)
        print("upstream connection closed \(Int(elapsed * 1000)) ms after the paused uploader reset")
        XCTAssertLessThan(elapsed, 0.5)
    }

    func testBackendLearnsAtOnceWhenAPausedUploaderResets() throws {
        let backend = try MisbehavingBackend(receiveBuffer: 32 * 1024)
        let proxy = try proxy(backend)
        let client = try RawClient(port: proxy.port)
        client.setSendTimeout(0.2)
        client.send("POST /slow-upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000000\r\n\r\n")
        // The backend reads 16 KiB every 20 ms through a 32 KiB buffer: the proxy soon holds
        // megabytes for it and stops reading the client. Upload for 1.5 s (a blocked send gives
        // up after 0.2 s).
        let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
        let until = Date().addingTimeInterval(1.5)
        while Date() < until { client.send(chunk) }
        let left = Date().timeIntervalSince1970
        client.close(reset: true)
        // The upstream is reset, not closed behind the bytes still queued toward the backend.
        let closed = try XCTUnwrap(backend.closedAt(path: "/slow-upload", within: 5), "the backend kept receiving the abandoned upload")
        print("backend saw the abandoned upload end \(Int((closed - left) * 1000)) ms after the client reset")
        XCTAssertLessThan(closed - left, 0.5)
    }

    private func eventually(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }
}
