import HTTP1
import TokenManager
import XCTest
@testable import Proxy

final class PlaceholderScannerTests: XCTestCase {
    private let scanner = PlaceholderScanner(["anthropic": "tsp_anthropicPlaceholder0001", "stripe": "operator-given-stand-in"])!

    private func scan(_ text: String) throws -> PlaceholderScanner.Finding {
        try scanner.scan(Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) })
    }

    private func found(_ name: String, _ placeholder: String, places: Int = 1) -> PlaceholderScanner.Finding {
        .credential(name, placeholder: Array(placeholder.utf8), places: places)
    }

    func testNoScannerWithoutPlaceholders() {
        XCTAssertNil(PlaceholderScanner([:]))
    }

    func testFindsAPlaceholderInAFieldBearerBasicAndTheQuery() throws {
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"), .none)
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_anthropicPlaceholder0001\r\n\r\n"),
                       found("anthropic", "tsp_anthropicPlaceholder0001"))
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer operator-given-stand-in\r\n\r\n"),
                       found("stripe", "operator-given-stand-in"))
        let pair = Base64.encode(Array("operator-given-stand-in:".utf8))
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic \(pair)\r\n\r\n"), found("stripe", "operator-given-stand-in"))
        XCTAssertEqual(try scan("GET /m?key=tsp_anthropicPlaceholder0001 HTTP/1.1\r\nHost: a\r\n\r\n"),
                       found("anthropic", "tsp_anthropicPlaceholder0001"))
        XCTAssertEqual(try scan("GET http://a/m?key=tsp_anthropicPlaceholder0001 HTTP/1.1\r\nHost: a\r\n\r\n"),
                       found("anthropic", "tsp_anthropicPlaceholder0001"))
    }

    func testTwoCredentialsPlaceholdersAreSeveral() throws {
        XCTAssertEqual(try scan("GET /?k=operator-given-stand-in HTTP/1.1\r\nHost: a\r\nX-K: tsp_anthropicPlaceholder0001\r\n\r\n"),
                       .several(["anthropic", "stripe"]))
    }

    func testATspValueThatIsNoCredentialsIsUnknownWhereverItStartsAValue() throws {
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_guessed\r\n\r\n"), .unknown)
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer tsp_anthropicPlaceholder0002\r\n\r\n"), .unknown)
        XCTAssertEqual(try scan("GET /x?key=tsp_x HTTP/1.1\r\nHost: a\r\n\r\n"), .unknown)
        let pair = Base64.encode(Array("user:tsp_zzz".utf8))
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic \(pair)\r\n\r\n"), .unknown)
        // Inside a longer word it starts no value.
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nX-Note: gotsp_x\r\n\r\n"), .none)
        // A known placeholder beside an unknown one: still refused.
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_anthropicPlaceholder0001\r\nX-B: tsp_other\r\n\r\n"),
                       .unknown)
    }

    func testByteSearchFindsEveryPlaceAndTheEnd() {
        let text = Array("aaXaaXaa".utf8)
        text.withUnsafeBytes {
            XCTAssertEqual(ByteSearch.find(Array("aa".utf8), in: $0), 0)
            XCTAssertEqual(ByteSearch.find(Array("aa".utf8), in: $0, from: 1), 3)
            XCTAssertEqual(ByteSearch.find(Array("Xaa".utf8), in: $0, from: 3), 5)
            XCTAssertNil(ByteSearch.find(Array("aaXaaXaaX".utf8), in: $0))
            XCTAssertNil(ByteSearch.find(Array("b".utf8), in: $0))
            XCTAssertTrue(ByteSearch.matches(Array("Xa".utf8), in: $0, at: 5))
            XCTAssertFalse(ByteSearch.matches(Array("aa".utf8), in: $0, at: 7))
            XCTAssertEqual(String(decoding: ByteSearch.replacing(Array("aa".utf8), with: Array("b".utf8), in: $0), as: UTF8.self), "bXbXb")
        }
    }

    func testEncodedPlacesTwiceAndUndecodableBasic() throws {
        // %74 is "t": an encoded placeholder in the query is still one; an encoded unknown one too.
        XCTAssertEqual(try scan("GET /m?key=%74sp_anthropicPlaceholder0001 HTTP/1.1\r\nHost: a\r\n\r\n"),
                       found("anthropic", "tsp_anthropicPlaceholder0001"))
        XCTAssertEqual(try scan("GET /m?key=%74sp_guess HTTP/1.1\r\nHost: a\r\n\r\n"), .unknown)
        XCTAssertEqual(try scan("GET /m?a=operator-given-stand-in&b=operator-given-stand-in HTTP/1.1\r\nHost: a\r\nX-K: operator-given-stand-in\r\n\r\n"),
                       found("stripe", "operator-given-stand-in", places: 3))
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic !!notbase64!!\r\n\r\n"), .undecodableBasic)
        let pair = Base64.encode(Array("operator-given-stand-in:".utf8))
        XCTAssertEqual(try scan("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: BASIC\t\(pair)\r\n\r\n"), found("stripe", "operator-given-stand-in"))
        XCTAssertEqual(try scan("GET http://tsp_anthropicPlaceholder0001.example/ HTTP/1.1\r\nHost: tsp_anthropicPlaceholder0001.example\r\n\r\n"),
                       .unknown, "the authority is searched too: a host is lowercased, so the placeholder there is no known one, and refused")
    }
}
