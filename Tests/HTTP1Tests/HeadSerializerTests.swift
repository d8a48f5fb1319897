import HTTP1
import XCTest

final class HeadSerializerTests: XCTestCase {
    func testRequest() throws {
        let fields = HTTPFields([HTTPField(name: "Host", value: "a.test"), HTTPField(name: "X-Empty", value: "")])
        let out = HeadSerializer.request(method: "GET", target: "/x?y", version: .http1_1, fields: fields)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "GET /x?y HTTP/1.1\r\nHost: a.test\r\nX-Empty: \r\n\r\n")
        // Round trip through the parser.
        let head = try out.withUnsafeBytes { try RequestHeadParser.parse($0) }
        XCTAssertEqual(head.fields, fields)
        let old = HeadSerializer.request(method: "GET", target: "/", version: .http1_0, fields: HTTPFields())
        XCTAssertEqual(String(decoding: old, as: UTF8.self), "GET / HTTP/1.0\r\n\r\n")
    }

    func testResponse() {
        let out = HeadSerializer.response(version: .http1_1, status: 200, reason: "OK",
                                          fields: HTTPFields([HTTPField(name: "Content-Length", value: "0")]))
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let empty = HeadSerializer.response(version: .http1_0, status: 431, reason: "", fields: HTTPFields())
        XCTAssertEqual(String(decoding: empty, as: UTF8.self), "HTTP/1.0 431 \r\n\r\n")
    }

    func testReasonPhrases() {
        XCTAssertEqual(HeadSerializer.reasonPhrase(200), "OK")
        XCTAssertEqual(HeadSerializer.reasonPhrase(400), "Bad Request")
        XCTAssertEqual(HeadSerializer.reasonPhrase(431), "Request Header Fields Too Large")
        XCTAssertEqual(HeadSerializer.reasonPhrase(502), "Bad Gateway")
        XCTAssertEqual(HeadSerializer.reasonPhrase(799), "")
    }

    func testChunkHeader() {
        XCTAssertEqual(HeadSerializer.chunkHeader(0), bytes("0\r\n"))
        XCTAssertEqual(HeadSerializer.chunkHeader(0x1a2b), bytes("1a2b\r\n"))
        XCTAssertEqual(HeadSerializer.chunkHeader(15), bytes("f\r\n"))
        XCTAssertEqual(HeadSerializer.chunkHeader(16), bytes("10\r\n"))
        XCTAssertEqual(HeadSerializer.chunkHeader(Int.max), bytes("7fffffffffffffff\r\n"))
    }

    func testVersionDescriptionAndErrorStatus() {
        XCTAssertEqual(HTTPVersion.http1_0.description, "HTTP/1.0")
        XCTAssertEqual(HTTPVersion.http1_1.description, "HTTP/1.1")
        XCTAssertEqual(HTTPParseError.invalid("x").status, 400)
    }
}
