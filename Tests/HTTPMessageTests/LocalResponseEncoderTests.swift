import HTTPMessage
import HTTP1
import TestSupport
import XCTest

final class LocalResponseEncoderTests: XCTestCase {
    private func text(_ response: LocalResponse, method: String = "GET", version: HTTPVersion = .http1_1,
                      keepAlive: Bool = true) -> (String, Bool) {
        let encoded = LocalResponseEncoder.encode(response, method: method, version: version, keepAlive: keepAlive)
        return (String(decoding: encoded.bytes, as: UTF8.self), encoded.closes)
    }

    func testContentLengthAndBody() {
        let (wire, closes) = text(.text("hi"))
        XCTAssertEqual(wire, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nhi")
        XCTAssertFalse(closes)
    }

    func testCloseAndKeepAliveHeaders() {
        XCTAssertTrue(text(.text("x"), keepAlive: false).0.contains("Connection: close\r\n"))
        XCTAssertTrue(text(.text("x"), keepAlive: false).1)
        XCTAssertTrue(text(.text("x"), version: .http1_0).0.contains("Connection: keep-alive\r\n"))
        let handlerClose = text(LocalResponse(status: 200, headers: [("Connection", "close")]))
        XCTAssertTrue(handlerClose.1)
        XCTAssertEqual(handlerClose.0.components(separatedBy: "Connection: close").count, 2, "written once")
    }

    func testNoBodyForHeadAnd204() {
        XCTAssertEqual(text(.text("abc"), method: "HEAD").0.hasSuffix("Content-Length: 3\r\n\r\n"), true)
        let noContent = text(LocalResponse(status: 204, body: Array("x".utf8))).0
        XCTAssertEqual(noContent, "HTTP/1.1 204 No Content\r\n\r\n")
    }

    func testInvalidStatusBecomes500() {
        XCTAssertTrue(text(LocalResponse(status: 100)).0.hasPrefix("HTTP/1.1 500 "))
        XCTAssertTrue(text(LocalResponse(status: 42)).0.hasPrefix("HTTP/1.1 500 "))
    }
}
