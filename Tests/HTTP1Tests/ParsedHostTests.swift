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
}
