import HTTP1
import HTTP2
import XCTest

/// HTTP/2 request heads as the HTTP/1.1 requests a session reads.
final class HTTP2RequestTranslatorTests: XCTestCase {
    private func head(_ method: String = "GET", authority: String? = "api.test", path: String? = "/p?q=1",
                      fields: [(String, String)] = []) -> HTTP2Head {
        HTTP2Head(method: method, scheme: "https", authority: authority, path: path,
                  fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
    }

    /// The translation, its head as text.
    private func translate(_ head: HTTP2Head, endStream: Bool) -> (head: String, framing: HTTP2RequestTranslator.BodyFraming)? {
        HTTP2RequestTranslator.translate(head, endStream: endStream).map { (String(decoding: $0.head, as: UTF8.self), $0.framing) }
    }

    func testABodylessGetBecomesAnOriginFormRequestThatClosesAfterItsResponse() throws {
        let (text, framing) = try XCTUnwrap(translate(head(fields: [("accept", "*/*")]), endStream: true))
        XCTAssertEqual(text, "GET /p?q=1 HTTP/1.1\r\nHost: api.test\r\naccept: */*\r\nconnection: close\r\n\r\n")
        XCTAssertEqual(framing, HTTP2RequestTranslator.BodyFraming.none)
    }

    func testAuthorityWinsOverHostAndCookiesAreJoined() throws {
        let (text, _) = try XCTUnwrap(translate(
            head(fields: [("host", "evil.test"), ("cookie", "a=1"), ("x-b", "2"), ("cookie", "c=3"), ("te", "trailers")]), endStream: true))
        XCTAssertEqual(text, "GET /p?q=1 HTTP/1.1\r\nHost: api.test\r\nx-b: 2\r\ncookie: a=1; c=3\r\nconnection: close\r\n\r\n")
    }

    func testHostStandsInForAMissingAuthority() throws {
        let (text, _) = try XCTUnwrap(translate(head(authority: nil, fields: [("host", "h.test:8443")]), endStream: true))
        XCTAssertTrue(text.hasPrefix("GET /p?q=1 HTTP/1.1\r\nHost: h.test:8443\r\n"), text)
        XCTAssertNil(translate(head(authority: nil), endStream: true), "no authority at all")
    }

    func testBodiesAreFramedByTheirLengthOrChunked() throws {
        let sized = try XCTUnwrap(translate(head("POST", fields: [("content-length", "5")]), endStream: false))
        XCTAssertEqual(sized.framing, .raw)
        XCTAssertTrue(sized.head.contains("content-length: 5\r\n") && !sized.head.contains("transfer-encoding"))
        let streamed = try XCTUnwrap(translate(head("POST"), endStream: false))
        XCTAssertEqual(streamed.framing, .chunked)
        XCTAssertTrue(streamed.head.hasSuffix("transfer-encoding: chunked\r\nconnection: close\r\n\r\n"), streamed.head)
        let empty = try XCTUnwrap(translate(head("POST"), endStream: true))
        XCTAssertEqual(empty.framing, HTTP2RequestTranslator.BodyFraming.none)
        XCTAssertTrue(empty.head.contains("content-length: 0\r\n"), "an HTTP/1.1 upstream does not wait for a body")
        XCTAssertEqual(HTTP2RequestTranslator.chunkHeader(300), "12c\r\n")
        XCTAssertEqual(HTTP2RequestTranslator.lastChunk(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
                       "0\r\ngrpc-status: 0\r\n\r\n")
    }

    func testConnectBecomesAnHTTP1Connect() throws {
        let connect = HTTP2Head(method: "CONNECT", scheme: nil, authority: "db.test:5432", path: nil)
        let (text, framing) = try XCTUnwrap(translate(connect, endStream: false))
        XCTAssertEqual(text, "CONNECT db.test:5432 HTTP/1.1\r\nHost: db.test:5432\r\n\r\n")
        XCTAssertEqual(framing, .raw)
    }

    func testAnExtendedConnectIsNotTranslated() {
        var websocket = head("CONNECT")
        websocket.extendedProtocol = "websocket"
        XCTAssertNil(translate(websocket, endStream: false))
    }
}
