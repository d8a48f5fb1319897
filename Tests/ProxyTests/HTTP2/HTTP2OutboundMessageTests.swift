import EventLoop
import HTTP1
import HTTP2
import XCTest
@testable import Proxy

/// Responses handed to a stream typed — heads as fields, body bytes, ends — as the frames an
/// HTTP/2 app receives (a client codec reads what the message made the server codec send), and
/// an HTTP/1.1 app's chunked request (its head as the exchange's plan makes it) de-chunked for an
/// HTTP/2 upstream.
final class HTTP2OutboundMessageTests: XCTestCase {
    private var server: HTTP2Codec!
    private var client: HTTP2Codec!
    private var stream: Int32 = 0
    private let body = OwnedEventBuffer()

    override func setUpWithError() throws {
        server = HTTP2Codec(role: .server)
        client = HTTP2Codec(role: .client, settings: HTTP2Settings(streamWindow: 1024 * 1024))
        stream = try client.submitRequest(HTTP2Head(method: "GET", scheme: "http", authority: "a.test", path: "/"), endStream: true)
        _ = try exchange()
    }

    /// Moves bytes both ways until both codecs are quiet; returns the client's events (no settings).
    private func exchange() throws -> [HTTP2Event] {
        var events: [HTTP2Event] = []
        for _ in 0..<1000 {
            var toServer: [UInt8] = [], toClient: [UInt8] = []
            events += try client.send { toServer += $0 }
            try server.send { toClient += $0 }
            if toServer.isEmpty && toClient.isEmpty { break }
            _ = try toServer.withUnsafeBytes { try server.receive($0) }
            events += try toClient.withUnsafeBytes { try client.receive($0) }
        }
        return events.filter { if case .settings = $0 { false } else { true } }
    }

    /// Appends `bytes` to the body and sends what the message has.
    private func send(_ message: inout HTTP2OutboundMessage, _ bytes: String, closed: Bool = false) throws -> [HTTP2Event] {
        body.buffer.append(bytes)
        try message.send(body.buffer, closed: closed, codec: server)
        return try exchange()
    }

    /// A head as the session hands it over: its fields located in their bytes.
    private func head(status: Int = 200, _ fields: [(String, String)], body: HTTP2OutboundMessage.Phase) -> HTTP2OutboundMessage.AnnouncedHead {
        HTTP2OutboundMessage.AnnouncedHead(status: status, fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }), body: body)
    }

    func testAHeadOfFieldsLosesItsConnectionFieldsAndABodyEndsWithItsLength() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announce(head([("Content-Type", "text/plain"), ("Connection", "close"), ("Keep-Alive", "timeout=5"),
                               ("Content-Length", "5")], body: .length(5)), committed: true)
        let events = try send(&message, "hello")
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "content-type", value: "text/plain"),
                                                                                HTTPField(name: "content-length", value: "5")]))),
            .data(stream: stream, Array("hello".utf8)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    func testInterimHeadsGoFirstAndABodylessHeadEndsTheStream() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announceInterim(status: 100)
        message.announceInterim(status: 101)  // never passed on: an HTTP/2 stream is not upgraded
        message.announceInterim(status: 103)
        message.announce(head(status: 204, [], body: .done), committed: true)
        let events = try send(&message, "")
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 100)), .head(stream: stream, HTTP2Head(status: 103)),
            .head(stream: stream, HTTP2Head(status: 204)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    func testABodyUntilCloseEndsWhenTheSenderCloses() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announce(head([], body: .untilClose), committed: true)
        var events = try send(&message, "some")
        XCTAssertFalse(events.contains(.end(stream: stream)))
        events += try send(&message, " more", closed: true)
        let received = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "some more")
        XCTAssertTrue(events.contains(.end(stream: stream)))
    }

    func testABodyWaitsInTheSendersBufferWhileTheStreamQueueIsFull() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        let size = 1024 * 1024
        message.announce(head([], body: .length(UInt64(size))), committed: true)
        body.buffer.append([UInt8](repeating: 0x61, count: size))
        // Without sending, the codec's queue takes up to its limit; the rest stays in the buffer.
        try message.send(body.buffer, closed: false, codec: server)
        XCTAssertEqual(server.bufferedBody(stream: stream), HTTP2OutboundMessage.sendQueueLimit)
        XCTAssertEqual(body.buffer.count, size - HTTP2OutboundMessage.sendQueueLimit)
        var received = 0
        for _ in 0..<200 where message.phase != .done || server.bufferedBody(stream: stream) > 0 {
            var now = 0
            for event in try exchange() { if case .data(_, let bytes) = event { now += bytes.count } }
            received += now
            client.consumed(stream: stream, count: now)
            try message.send(body.buffer, closed: false, codec: server)
        }
        for event in try exchange() { if case .data(_, let bytes) = event { received += bytes.count } }
        XCTAssertEqual(received, size)
    }

    func testAnUncommittedHeadWaitsAndADroppedOneLeavesTheErrorHeadAnnouncedNext() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announce(head([("X-A", "1")], body: .untilEnd), committed: false)
        XCTAssertEqual(try send(&message, ""), [], "nothing goes out while the body's first bytes are checked")
        message.dropAnnounced()
        let error = ErrorResponse.response(for: ProxyError(status: 502, type: "http_response_incomplete", message: "cut"), close: true,
                                           retryAfter: nil, grpc: false)
        message.announce(HTTP2OutboundMessage.AnnouncedHead(status: error.status, fields: error.fields, body: .length(UInt64(error.body.count))),
                         committed: true)
        let events = try send(&message, String(decoding: error.body, as: UTF8.self), closed: true)
        guard case .head(_, let sent)? = events.first else { return XCTFail("no head: \(events)") }
        XCTAssertEqual(sent.status, 502)
        XCTAssertNil(sent.firstField("x-a"), "the dropped head never goes out")
        XCTAssertNil(sent.firstField("connection"), "HTTP/1.1's close is not an HTTP/2 field")
        XCTAssertEqual(sent.firstField("proxy-status"), "token-sidecar; error=http_response_incomplete; details=\"cut\"")
        let received = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(received, error.body)
        XCTAssertTrue(events.contains(.end(stream: stream)))
    }

    func testACommittedHeadGoesOutBeforeTheBytesThatFollowIt() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announce(head([("X-A", "1")], body: .length(3)), committed: false)
        body.buffer.append("abc")
        message.commitAnnounced()
        let events = try send(&message, "", closed: true)
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "x-a", value: "1")]))),
            .data(stream: stream, Array("abc".utf8)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    /// A response of unknown length goes unframed, and ends — with its trailers — only when the
    /// sender says its message ended: one that closes without saying so (a truncated response)
    /// never ends the stream as if it were whole.
    func testABodyUntilItsMessageEndsEndsWithItsTrailersOnlyWhenTheSenderSaysSo() throws {
        var message = HTTP2OutboundMessage(requestMethod: "GET", stream: stream)
        message.announce(head([], body: .untilEnd), committed: true)
        var events = try send(&message, "0\r\n", closed: false)
        events += try send(&message, "abc", closed: true)
        XCTAssertEqual(message.phase, .untilEnd, "closed without an end: not done (the server session resets it)")
        XCTAssertFalse(events.contains(.end(stream: stream)))
        message.endMessage(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        events += try send(&message, "")
        let received = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "0\r\nabc", "bytes as they are")
        XCTAssertEqual(Array(events.suffix(3)), [.trailers(stream: stream, HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
                                                 .end(stream: stream), .closed(stream: stream, .noError)])
        XCTAssertEqual(message.phase, .done)
    }

    /// An HTTP/1.1 app's chunked request body to an HTTP/2 upstream, split anywhere: its
    /// chunks' bytes as DATA, its trailers as HTTP/2 trailers.
    func testAChunkedRequestBodySplitAnywhereGoesAsDataAndItsTrailersAsTrailers() throws {
        let upstream = HTTP2Codec(role: .client)
        let origin = HTTP2Codec(role: .server, settings: HTTP2Settings(streamWindow: 1024 * 1024))
        var message = HTTP2OutboundMessage()
        let head = try Array("POST /up HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\nX-App: 1\r\n\r\n".utf8)
            .withUnsafeBytes { try RequestHeadParser.parse($0) }
        let decision = RouteDecision(target: UpstreamTarget(host: "a.test", port: 80, tls: nil, poolKey: "a.test|80", allowsLinkLocal: false),
                                     hostField: "a.test", credential: nil, routeName: nil)
        try message.submitRequest(UpstreamRequestPlan(head: head, decision: decision, token: nil, upgrade: nil, trace: nil, via: .http1_1),
                                  scheme: "http", body: .chunked, codec: upstream)
        var events: [HTTP2Event] = []
        func pump() throws {
            for _ in 0..<100 {
                var toOrigin: [UInt8] = [], toUpstream: [UInt8] = []
                try upstream.send { toOrigin += $0 }
                events += try origin.send { toUpstream += $0 }
                if toOrigin.isEmpty && toUpstream.isEmpty { break }
                events += try toOrigin.withUnsafeBytes { try origin.receive($0) }
                _ = try toUpstream.withUnsafeBytes { try upstream.receive($0) }
            }
        }
        for character in "5\r\nhello\r\n6\r\n world\r\n0\r\ngrpc-status: 0\r\n\r\n" {
            body.buffer.append(String(character))
            try message.send(body.buffer, closed: false, codec: upstream)
            try pump()
        }
        let received = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "hello world")
        XCTAssertEqual(events.first { if case .head = $0 { true } else { false } }, .head(stream: message.stream, HTTP2Head(
            method: "POST", scheme: "http", authority: "a.test", path: "/up",
            fields: HTTPFields([HTTPField(name: "x-app", value: "1"), HTTPField(name: "via", value: "1.1 token-sidecar"),
                                HTTPField(name: "te", value: "trailers")]))), "the head as the plan makes it, the body unframed")
        XCTAssertTrue(events.contains(.trailers(stream: message.stream, HTTPFields([HTTPField(name: "grpc-status", value: "0")]))))
        XCTAssertTrue(events.contains(.end(stream: message.stream)))
        XCTAssertEqual(message.phase, .done)
    }
}
