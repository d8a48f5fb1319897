@testable import HTTP1
import XCTest

/// The `Host` a connection remembers: taken for exactly its bytes, and only for them.
final class ParsedHostTests: XCTestCase {
    private func head(host: String, lastHost: inout ParsedHost?) throws -> RequestHead {
        try RequestHeadParser.head(method: "GET", target: "/", fieldSection: Array("Host: \(host)\r\n\r\n".utf8),
                                   lastHost: &lastHost)
    }

    func testTheRememberedAuthorityIsTakenForItsExactBytesWithoutAParse() throws {
        // A memo whose authority is not what its bytes parse to: a head that gets it was not
        // parsed again (the memo is made only by the parse, so this cannot happen for real).
        let bytes = Array("api.test".utf8)
        var last: ParsedHost? = bytes.withUnsafeBytes {
            ParsedHost($0, 0..<$0.count, parsedTo: Authority(host: "remembered.test", port: 1))
        }
        XCTAssertEqual(try head(host: "api.test", lastHost: &last).host, Authority(host: "remembered.test", port: 1))
        XCTAssertEqual(try head(host: "api.tesT", lastHost: &last).host, Authority(host: "api.test", port: nil),
                       "one byte different: parsed")
        XCTAssertEqual(last?.authority, Authority(host: "api.test", port: nil), "and remembered instead")
        XCTAssertEqual(try head(host: "api.test", lastHost: &last).host, Authority(host: "api.test", port: nil))
    }

    /// An HTTP/1.1 connection's heads: an absolute-form target's authority, or else the
    /// `Host`, is remembered; a next head with the same bytes takes it unparsed, one with other
    /// bytes is parsed (and refused when they are bad) and remembered instead; the target and
    /// `Host` must still agree.
    func testAConnectionsNextHeadTakesItsRememberedAuthorityOnlyForTheSameBytes() throws {
        func prefix(_ text: String, _ last: inout ParsedHost?) throws -> RequestHead {
            let bytes = Array(text.utf8)
            var memo = last
            defer { last = memo }
            let parsed = bytes.withUnsafeBytes { buffer in
                Result { () throws(HTTPParseError) in try RequestHeadParser.parsePrefix(buffer, lastHost: &memo).head }
            }
            return try parsed.get()
        }
        var last: ParsedHost? = Array("api.test:8080".utf8).withUnsafeBytes {
            ParsedHost($0, 0..<$0.count, parsedTo: Authority(host: "remembered.test", port: 1))
        }
        // The same bytes in an absolute-form target (and as its Host): the memo, unparsed.
        let remembered = try prefix("GET http://api.test:8080/a HTTP/1.1\r\nHost: api.test:8080\r\n\r\n", &last)
        XCTAssertEqual(remembered.host, Authority(host: "remembered.test", port: 1))
        // Other bytes: parsed and remembered.
        var head = try prefix("GET http://API.test:8080/b HTTP/1.1\r\nHost: api.test:8080\r\n\r\n", &last)
        XCTAssertEqual(head.host, Authority(host: "api.test", port: 8080))
        XCTAssertEqual(last?.authority, Authority(host: "api.test", port: 8080))
        let memo = last
        head = try prefix("POST http://API.test:8080/c HTTP/1.1\r\nHost: api.test:8080\r\nContent-Length: 0\r\n\r\n", &last)
        XCTAssertEqual(head.host, Authority(host: "api.test", port: 8080))
        XCTAssertTrue(last === memo, "the same bytes again: the same memo")
        // Bad bytes after good ones are still refused; a Host that disagrees still is.
        XCTAssertThrowsError(try prefix("GET http://api.te@st:8080/ HTTP/1.1\r\nHost: api.test:8080\r\n\r\n", &last))
        XCTAssertThrowsError(try prefix("GET http://API.test:8080/ HTTP/1.1\r\nHost: other.test:8080\r\n\r\n", &last))
        XCTAssertThrowsError(try prefix("GET http://api.te$t/ HTTP/1.1\r\nHost: api.te$t\r\n\r\n", &last))
        // Origin-form: the Host is remembered the same way.
        head = try prefix("GET /d HTTP/1.1\r\nHost: origin.test\r\n\r\n", &last)
        XCTAssertEqual(head.host, Authority(host: "origin.test", port: nil))
        XCTAssertEqual(last?.authority, Authority(host: "origin.test", port: nil))
        head = try prefix("GET /e HTTP/1.1\r\nHost: origin.test\r\n\r\n", &last)
        XCTAssertEqual(head.host, Authority(host: "origin.test", port: nil))
        XCTAssertThrowsError(try prefix("GET /f HTTP/1.1\r\nHost: origin.test:x\r\n\r\n", &last))
    }
}
