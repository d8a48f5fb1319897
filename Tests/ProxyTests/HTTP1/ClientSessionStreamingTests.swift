import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// Bodies both ways over in-memory streams (``SessionHarness``): uploads and downloads larger
/// than the proxy's windows arrive intact in every framing, an HTTP/1.0 client gets a
/// close-delimited body, `Expect: 100-continue` and bodyless responses, and a client that
/// leaves while its body is collected. (A backend that fails mid-response and a client that
/// leaves mid-upload: ``ClientSessionTests``.)
final class ClientSessionStreamingTests: XCTestCase {
    private func pattern(_ size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var x: UInt32 = 2463534242
        for i in 0..<size { x ^= x << 13; x ^= x >> 17; x ^= x << 5; bytes[i] = UInt8(truncatingIfNeeded: x) }
        return bytes
    }

    /// `body` framed as chunks of `size` bytes and the last chunk.
    private func chunked(_ body: [UInt8], size: Int) -> [UInt8] {
        var framed: [UInt8] = []
        for start in stride(from: 0, to: body.count, by: size) {
            let end = min(start + size, body.count)
            framed += Array(String(end - start, radix: 16).utf8) + [13, 10] + body[start..<end] + [13, 10]
        }
        return framed + Array("0\r\n\r\n".utf8)
    }

    /// A message's head (as text) and its body bytes.
    private func split(_ message: [UInt8]) -> (head: String, body: ArraySlice<UInt8>)? {
        guard let end = message.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        return (String(decoding: message[..<end.upperBound], as: UTF8.self), message[end.upperBound...])
    }

    /// Every byte the client took so far, after taking what is queued now.
    private func delivered(_ client: MemoryStream) -> [UInt8] {
        client.peerReads()
        return client.delivered
    }

    /// The payload of a chunked body (trailers ignored); `nil` if it is not one, complete.
    private func dechunk(_ framed: ArraySlice<UInt8>) -> [UInt8]? {
        var body: [UInt8] = []
        var index = framed.startIndex
        while let lineEnd = framed[index...].firstRange(of: [13, 10]) {
            let sizeField = String(decoding: framed[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first
            guard let size = Int(sizeField ?? "", radix: 16), framed.distance(from: lineEnd.upperBound, to: framed.endIndex) >= size + 2
            else { return nil }
            if size == 0 { return body }
            index = lineEnd.upperBound
            body += framed[index..<index + size]
            index += size + 2
        }
        return nil
    }

    // MARK: - large bodies

    /// An upload of 600 KiB, sent 32 KiB at a time to a backend that takes 20 KiB at a time:
    /// the proxy pauses the app at its watermark and the backend gets every byte, in order,
    /// with Content-Length and chunked alike.
    func testUploadsWithContentLengthAndChunkedArriveIntact() throws {
        let body = pattern(600 * 1024 + 17)
        for isChunked in [false, true] {
            let harness = try SessionHarness()
            let client = harness.connectClient()
            let framing = isChunked ? "Transfer-Encoding: chunked" : "Content-Length: \(body.count)"
            client.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\n\(framing)\r\n\r\n")
            let framed = isChunked ? chunked(body, size: 10_000) : body
            var sent = 0
            var reached: [UInt8] = []
            var paused = false
            for _ in 0..<10_000 {
                if sent < framed.count, client.unread.isEmpty {
                    let end = min(sent + 32 * 1024, framed.count)
                    client.receive(Array(framed[sent..<end]))
                    sent = end
                }
                paused = paused || !client.isReading
                if let backend = harness.connectedBackend() { reached += backend.peerReads(max: 20_000) }
                client.deliver()
                if sent == framed.count, client.unread.isEmpty, harness.connectedBackend()?.output.isEmpty ?? false { break }
            }
            XCTAssertTrue(paused, "the upload crossed the proxy's watermark (\(framing))")
            XCTAssertEqual(harness.backends.count, 1)
            let (head, bytes) = try XCTUnwrap(split(reached), framing)
            XCTAssertTrue(head.hasPrefix("POST /upload HTTP/1.1\r\n"), head)
            let arrived = head.contains("Transfer-Encoding: chunked\r\n") ? dechunk(bytes) : Array(bytes)
            XCTAssertEqual(arrived?.count, body.count, framing)
            XCTAssertTrue(arrived == body, "every byte, in order (\(framing))")
            try XCTUnwrap(harness.connectedBackend()).receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            XCTAssertTrue(client.readAll().hasPrefix("HTTP/1.1 200 OK\r\n"), framing)
        }
    }

    /// A download of 600 KiB with Content-Length, chunked, and close-delimited, over one client
    /// connection that reads 40 KiB at a time (the backend is paused on it now and then): every
    /// byte arrives in order, and a close-delimited body is re-framed as chunked so the client
    /// connection survives.
    func testDownloadsInEveryFramingArriveIntact() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        let body = pattern(600 * 1024 + 3)
        for mode in ["cl", "chunked", "close"] {
            client.clearDelivered()
            client.receive("GET http://api.test/download?mode=\(mode) HTTP/1.1\r\nHost: api.test\r\n\r\n")
            let backend = try XCTUnwrap(harness.connectedBackend())
            XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /download?mode=\(mode) "), mode)
            let head = switch mode {
            case "cl": "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"
            case "chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            default: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
            }
            let framed = Array(head.utf8) + (mode == "chunked" ? chunked(body, size: 30_000) : body)
            var sent = 0
            var paused = false
            for _ in 0..<10_000 {
                if sent < framed.count, backend.unread.isEmpty {
                    let end = min(sent + 64 * 1024, framed.count)
                    backend.receive(Array(framed[sent..<end]))
                    sent = end
                }
                paused = paused || !backend.isReading
                client.peerReads(max: 40_000)
                backend.deliver()
                if sent == framed.count, backend.unread.isEmpty, client.output.isEmpty { break }
            }
            if mode == "close" { backend.end(.endOfStream) }
            XCTAssertTrue(paused, "the client fell behind the backend at times (\(mode))")
            let (responseHead, bytes) = try XCTUnwrap(split(delivered(client)), mode)
            XCTAssertTrue(responseHead.hasPrefix("HTTP/1.1 200 OK\r\n"), responseHead)
            let arrived = responseHead.contains("Transfer-Encoding: chunked\r\n") ? dechunk(bytes) : Array(bytes)
            XCTAssertEqual(arrived?.count, body.count, mode)
            XCTAssertTrue(arrived == body, "\(mode): every byte, in order")
            if mode == "close" {
                XCTAssertTrue(responseHead.contains("Transfer-Encoding: chunked\r\n"), "re-framed for an HTTP/1.1 client: \(responseHead)")
            }
            XCTAssertEqual(client.ending, .open, mode)
        }
    }

    func testHTTP10ClientGetsCloseDelimitedBodyForChunkedResponse() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("GET http://api.test/download HTTP/1.0\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        _ = backend.peerReads()
        let body = pattern(100_000)
        backend.receive(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + chunked(body, size: 7_000))
        let (head, bytes) = try XCTUnwrap(split(delivered(client)))
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertFalse(head.contains("Transfer-Encoding"), head)
        XCTAssertTrue(Array(bytes) == body, "the payload, without chunk framing")
        XCTAssertEqual(client.ending, .closedAfterFlush, "the close ends the body")
    }

    // MARK: - the request's body

    /// Under the 64 KiB collected before a backend connection is taken: a client that leaves
    /// then opened no backend connection, its session is gone, and the next client is served.
    func testClientDisconnectWhileItsBodyIsCollectedReachesNoBackend() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1000000\r\n\r\n"
                       + String(repeating: "x", count: 1000))
        client.end(.endOfStream)
        XCTAssertEqual(client.ending, .closed)
        XCTAssertNil(harness.session(of: client), "the session is gone")
        XCTAssertTrue(harness.backends.isEmpty, "a body that never completed opened no backend connection")
        let next = harness.connectClient()
        next.receive("POST http://api.test/upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello")
        let backend = try XCTUnwrap(harness.connectedBackend())
        let request = String(decoding: backend.peerReads(), as: UTF8.self)
        XCTAssertTrue(request.contains("Content-Length: 5\r\n") && request.hasSuffix("\r\n\r\nhello"), request)
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertTrue(next.readAll().hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    /// The client waits for the backend's `100 Continue` before it sends its body: the head goes
    /// on at once, the interim response comes back, then the body and the final response.
    func testExpectContinueIsForwarded() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("POST http://api.test/continue HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend(), "the head is not held for a body the client will not send yet")
        let head = String(decoding: backend.peerReads(), as: UTF8.self)
        XCTAssertTrue(head.contains("Expect: 100-continue\r\n") && head.hasSuffix("\r\n\r\n"), head)
        backend.receive("HTTP/1.1 100 Continue\r\n\r\n")
        XCTAssertEqual(client.readAll(), "HTTP/1.1 100 Continue\r\n\r\n")
        client.clearDelivered()
        client.receive("hello")
        XCTAssertEqual(String(decoding: backend.peerReads(), as: UTF8.self), "hello")
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"body_len\": 5}")
        let final = client.readAll()
        XCTAssertTrue(final.hasPrefix("HTTP/1.1 200 OK\r\n") && final.hasSuffix("\r\n\r\n{\"body_len\": 5}"), final)
    }

    /// A HEAD's response and a 204 end at their heads, whatever they say: the next request on
    /// the connections gets its own answer.
    func testHeadAnd204HaveNoBody() throws {
        let harness = try SessionHarness()
        let client = harness.connectClient()
        client.receive("HEAD http://api.test/h HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("HEAD /h "))
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
        let headResponse = client.readAll()
        XCTAssertTrue(headResponse.hasPrefix("HTTP/1.1 200 OK\r\n") && headResponse.hasSuffix("\r\n\r\n"), headResponse)
        XCTAssertTrue(headResponse.contains("Content-Length: 100\r\n"), "a HEAD's head as the backend sent it")
        client.clearDelivered()
        client.receive("GET http://api.test/status/204 HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /status/204 "), "the HEAD's connection is reused")
        backend.receive("HTTP/1.1 204 No Content\r\n\r\n")
        let noContent = client.readAll()
        XCTAssertTrue(noContent.hasPrefix("HTTP/1.1 204 ") && noContent.hasSuffix("\r\n\r\n"), noContent)
        client.clearDelivered()
        client.receive("GET http://api.test/after HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(String(decoding: backend.peerReads(), as: UTF8.self).hasPrefix("GET /after "))
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n/after")
        let after = client.readAll()
        XCTAssertTrue(after.hasPrefix("HTTP/1.1 200 OK\r\n") && after.hasSuffix("\r\n\r\n/after"), after)
        XCTAssertEqual(harness.backends.count, 1)
        XCTAssertEqual(client.ending, .open)
    }
}
