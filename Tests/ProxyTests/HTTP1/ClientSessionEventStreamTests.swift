import TestSupport
import XCTest
@testable import Proxy

/// Server-sent events — a response without a length that arrives in pieces — over in-memory
/// streams (``SessionHarness``), with the spool on: the head and then every piece the backend
/// writes are in the app's hands before the next piece arrives, never held for a buffer to fill
/// and never spooled, whether the backend frames the stream with chunks or ends it by closing,
/// on a plain route and through an intercepted tunnel. (What only real sockets show, the flush
/// timing to a real SSE client: ``SocketEdgeTests``.)
final class ClientSessionEventStreamTests: XCTestCase {
    private static let events = (1...5).map { "id: \($0)\ndata: event \($0) of 5\n\n" }

    /// The app's stream request: `GET /events` for `api.test` (absolute form), or for
    /// `secure.test` inside a CONNECT tunnel that the proxy intercepts (the app's TLS played by
    /// the in-memory stream). Returns the app's connection and the backend's, the request read.
    private func openStream(_ harness: SessionHarness, intercepted: Bool,
                            file: StaticString = #filePath, line: UInt = #line) throws -> (client: MemoryStream, backend: MemoryStream) {
        let client = harness.connectClient()
        if intercepted {
            client.receive("CONNECT secure.test:443 HTTP/1.1\r\nHost: secure.test:443\r\n\r\n")
            XCTAssertEqual(client.readAll(), "HTTP/1.1 200 Connection established\r\n\r\n", file: file, line: line)
            client.clearDelivered()
            client.sendClientHello(serverName: "secure.test")
            client.completeHandshake()
            client.receive("GET /events HTTP/1.1\r\nHost: secure.test\r\nAccept: text/event-stream\r\n\r\n")
        } else {
            client.receive("GET http://api.test/events HTTP/1.1\r\nHost: api.test\r\nAccept: text/event-stream\r\n\r\n")
        }
        let backend = try XCTUnwrap(harness.connectedBackend(), file: file, line: line)
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.map(\.target), ["/events"], file: file, line: line)
        return (client, backend)
    }

    /// The payload of the complete chunks at the start of `framed`, and whether the last chunk
    /// (and the empty line after it) has arrived.
    private func dechunk(_ framed: ArraySlice<UInt8>) -> (payload: String, ended: Bool) {
        var payload: [UInt8] = []
        var index = framed.startIndex
        while let lineEnd = framed[index...].firstRange(of: [13, 10]),
              let size = Int(String(decoding: framed[index..<lineEnd.lowerBound], as: UTF8.self), radix: 16),
              framed.distance(from: lineEnd.upperBound, to: framed.endIndex) >= size + 2 {
            if size == 0 { return (String(decoding: payload, as: UTF8.self), true) }
            payload += framed[lineEnd.upperBound..<lineEnd.upperBound + size]
            index = lineEnd.upperBound + size + 2
        }
        return (String(decoding: payload, as: UTF8.self), false)
    }

    /// For each route and framing: the backend sends the head, then one event at a time; after
    /// each, the app has taken exactly the events sent so far (re-framed as chunks for this
    /// HTTP/1.1 app when the backend's body ends with its close), the spool untouched; then the
    /// stream's end reaches the app and its connection stays open.
    func testEveryEventReachesTheAppBeforeTheNextOneNeverSpooled() throws {
        for intercepted in [false, true] {
            for closeDelimited in [false, true] {
                let what = "\(intercepted ? "intercepted" : "plain"), \(closeDelimited ? "close-delimited" : "chunked")"
                let harness = try SessionHarness(spoolBytes: 1 << 30, intercepting: true)
                let (client, backend) = try openStream(harness, intercepted: intercepted)
                backend.receive("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                + (closeDelimited ? "Connection: close\r\n" : "Transfer-Encoding: chunked\r\n") + "\r\n")
                var received = client.peerReads()
                let headEnd = try XCTUnwrap(received.firstRange(of: Array("\r\n\r\n".utf8)), "\(what): the head is not held for the first event")
                let head = String(decoding: received[..<headEnd.upperBound], as: UTF8.self)
                XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(what): \(head)")
                XCTAssertTrue(head.contains("Content-Type: text/event-stream\r\n"), "\(what): \(head)")
                XCTAssertTrue(head.contains("Transfer-Encoding: chunked\r\n"), "\(what): \(head)")
                let bodyStart = headEnd.upperBound

                for (index, event) in Self.events.enumerated() {
                    backend.receive(closeDelimited ? event : String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n")
                    received += client.peerReads()
                    let body = dechunk(received[bodyStart...])
                    XCTAssertEqual(body.payload, Self.events[...index].joined(), "\(what): event \(index + 1) is with the app before the next is sent")
                    XCTAssertFalse(body.ended, what)
                    XCTAssertEqual(harness.context.metrics.spooledResponses, 0, "\(what): event \(index + 1) was spooled")
                    XCTAssertEqual(harness.context.spoolBudget.inUse, 0, "\(what): event \(index + 1) was spooled")
                }

                if closeDelimited { backend.end(.endOfStream) } else { backend.receive("0\r\n\r\n") }
                received += client.peerReads()
                let body = dechunk(received[bodyStart...])
                XCTAssertEqual(body.payload, Self.events.joined(), what)
                XCTAssertTrue(body.ended, "\(what): the end of the stream reaches the app")
                XCTAssertEqual(client.ending, .open, "\(what): the app's connection outlives the stream")
                XCTAssertEqual(harness.context.metrics.spooledResponses, 0, what)
            }
        }
    }
}
