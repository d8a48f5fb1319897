import EventLoop
import HTTP1
import HTTP2
import XCTest
@testable import Proxy

/// A session's HTTP/1.1 responses as the frames an HTTP/2 app receives (a client codec reads
/// what the translation made the server codec send).
final class HTTP2MessageTranslatorTests: XCTestCase {
    private var server: HTTP2Codec!
    private var client: HTTP2Codec!
    private var stream: Int32 = 0
    private let response = OwnedEventBuffer()

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

    private func translate(_ translator: inout HTTP2MessageTranslator, _ text: String, closed: Bool = false) throws -> [HTTP2Event] {
        response.buffer.append(text)
        try translator.translate(response.buffer, closed: closed, codec: server)
        return try exchange()
    }

    func testASizedResponseLosesItsConnectionFieldsAndEndsWithItsLength() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        let events = try translate(&translator, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "content-type", value: "text/plain"),
                                                                                HTTPField(name: "content-length", value: "5")]))),
            .data(stream: stream, Array("hello".utf8)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    func testChunksSplitAnywhereBecomeDataAndTheirTrailersTrailers() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\ngrpc-status: 0\r\n\r\n"
        var events: [HTTP2Event] = []
        for character in text { events += try translate(&translator, String(character)) }
        let body = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "hello world")
        XCTAssertEqual(events.first, .head(stream: stream, HTTP2Head(status: 200)))
        XCTAssertEqual(Array(events.suffix(3)), [.trailers(stream: stream, HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
                                                 .end(stream: stream), .closed(stream: stream, .noError)])
    }

    func testAnInterimResponsePassesOnAndABodylessOneEndsWithItsHead() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        let events = try translate(&translator, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 103, fields: HTTPFields([HTTPField(name: "link", value: "</a.css>")]))),
            .head(stream: stream, HTTP2Head(status: 204)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    func testABodyUntilCloseEndsWhenTheSessionCloses() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        var events = try translate(&translator, "HTTP/1.0 200 OK\r\n\r\nsome")
        XCTAssertFalse(events.contains(.end(stream: stream)))
        events += try translate(&translator, " more", closed: true)
        let body = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "some more")
        XCTAssertTrue(events.contains(.end(stream: stream)))
    }

    func testAResponseBodyWaitsInTheSessionOutputWhileTheStreamQueueIsFull() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        let size = 1024 * 1024
        response.buffer.append("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n")
        response.buffer.append([UInt8](repeating: 0x61, count: size))
        // Without sending, the codec's queue takes up to its limit; the rest stays in the output.
        try translator.translate(response.buffer, closed: false, codec: server)
        XCTAssertEqual(server.bufferedBody(stream: stream), HTTP2MessageTranslator.sendQueueLimit)
        XCTAssertEqual(response.buffer.count, size - HTTP2MessageTranslator.sendQueueLimit)
        var received = 0
        for _ in 0..<200 where translator.phase != .done || server.bufferedBody(stream: stream) > 0 {
            var now = 0
            for event in try exchange() { if case .data(_, let bytes) = event { now += bytes.count } }
            received += now
            client.consumed(stream: stream, count: now)
            try translator.translate(response.buffer, closed: false, codec: server)
        }
        for event in try exchange() { if case .data(_, let bytes) = event { received += bytes.count } }
        XCTAssertEqual(received, size)
    }

    func testASwitchingProtocolsResponseIsRefused() {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        response.buffer.append("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        XCTAssertThrowsError(try translator.translate(response.buffer, closed: false, codec: server))
    }

    /// A head the session hands over as located fields (what it forwards of the backend's head).
    private func announced(_ fields: [(String, String)], body: HTTP2MessageTranslator.Phase) -> HTTP2MessageTranslator.AnnouncedHead {
        var bytes: [UInt8] = []
        var lines: [FieldLine] = []
        for (name, value) in fields {
            let start = bytes.count
            bytes += Array("\(name): \(value)\r\n".utf8)
            lines.append(FieldLine(name: start..<start + name.utf8.count, value: start + name.utf8.count + 2..<bytes.count - 2))
        }
        return HTTP2MessageTranslator.AnnouncedHead(status: 200, bytes: bytes, lines: lines, body: body)
    }

    func testAnAnnouncedHeadGoesOutAfterTheInterimHeadsWrittenBeforeIt() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        let interim = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
        response.buffer.append(interim)
        translator.announce(announced([("Content-Type", "text/plain"), ("Via", "1.1 token-sidecar")], body: .length(5)),
                            committed: true, after: interim.utf8.count)
        let events = try translate(&translator, "hello", closed: true)
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 103, fields: HTTPFields([HTTPField(name: "link", value: "</a.css>; rel=preload")]))),
            .head(stream: stream, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "content-type", value: "text/plain"),
                                                                                HTTPField(name: "via", value: "1.1 token-sidecar")]))),
            .data(stream: stream, Array("hello".utf8)), .end(stream: stream), .closed(stream: stream, .noError),
        ], "the interim head first, then the announced one, names lowercased, then the body after it")
    }

    func testAnUncommittedHeadWaitsAndADroppedOneLeavesTheErrorResponseAsTheHead() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        translator.announce(announced([("X-A", "1")], body: .chunked), committed: false, after: 0)
        XCTAssertEqual(try translate(&translator, ""), [], "nothing goes out while the body's first bytes are checked")
        translator.dropAnnounced()
        let events = try translate(&translator, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 2\r\n\r\nno", closed: true)
        XCTAssertEqual(events.first, .head(stream: stream, HTTP2Head(status: 502, fields: HTTPFields([HTTPField(name: "content-length", value: "2")]))))
        XCTAssertTrue(events.contains(.end(stream: stream)))
    }

    func testACommittedHeadGoesOutBeforeTheChunksThatFollowIt() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        translator.announce(announced([("X-A", "1")], body: .chunked), committed: false, after: 0)
        translator.commitAnnounced()
        let events = try translate(&translator, "3\r\nabc\r\n0\r\n\r\n", closed: true)
        XCTAssertEqual(events, [
            .head(stream: stream, HTTP2Head(status: 200, fields: HTTPFields([HTTPField(name: "x-a", value: "1")]))),
            .data(stream: stream, Array("abc".utf8)), .end(stream: stream), .closed(stream: stream, .noError),
        ])
    }

    /// A response of unknown length announced as fields goes unframed, and ends — with its
    /// trailers — only when the session says its message ended: a session that closes without
    /// saying so (a truncated response) never ends the stream as if it were whole.
    func testABodyUntilItsMessageEndsEndsWithItsTrailersOnlyWhenTheSessionSaysSo() throws {
        var translator = HTTP2MessageTranslator(requestMethod: "GET", stream: stream)
        translator.announce(HTTP2MessageTranslator.AnnouncedHead(status: 200, bytes: [], lines: [], body: .untilEnd), committed: true,
                            after: 0)
        var events = try translate(&translator, "0\r\n", closed: false)
        events += try translate(&translator, "abc", closed: true)
        XCTAssertEqual(translator.phase, .untilEnd, "closed without an end: not done (the server session resets it)")
        XCTAssertFalse(events.contains(.end(stream: stream)))
        translator.endMessage(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")]))
        events += try translate(&translator, "")
        let body = events.flatMap { event -> [UInt8] in if case .data(_, let bytes) = event { bytes } else { [] } }
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "0\r\nabc", "bytes as they are")
        XCTAssertEqual(Array(events.suffix(3)), [.trailers(stream: stream, HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
                                                 .end(stream: stream), .closed(stream: stream, .noError)])
        XCTAssertEqual(translator.phase, .done)
    }
}
