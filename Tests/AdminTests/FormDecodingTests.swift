@testable import Admin
import Foundation
import XCTest

final class FormDecodingTests: XCTestCase {
    func testItems() {
        XCTAssertEqual(FormDecoding.items(Substring("a=1&b=x+y&&c&d=%2B%26%3D&e=%zz&f=%E2%80%A6")), [
            QueryItem(name: "a", value: "1"), QueryItem(name: "b", value: "x y"), QueryItem(name: "c", value: ""),
            QueryItem(name: "d", value: "+&="), QueryItem(name: "e", value: "%zz"), QueryItem(name: "f", value: "…"),
        ])
        XCTAssertEqual(FormDecoding.items(Array("k=v%".utf8)).first("k"), "v%")
    }

    func testBase64MatchesFoundation() {
        for text in ["", "a", "ab", "abc", "abcd", "demo client:s3cr%3At", String(repeating: "\u{FF}x", count: 7)] {
            let encoded = Data(text.utf8).base64EncodedString()
            XCTAssertEqual(Base64Decoding.decode(Substring(encoded)), Array(text.utf8), encoded)
            let unpadded = encoded.replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(Base64Decoding.decode(Substring(unpadded)), Array(text.utf8), unpadded)
        }
        XCTAssertNil(Base64Decoding.decode("ab=c"))
        XCTAssertNil(Base64Decoding.decode("a"))
        XCTAssertNil(Base64Decoding.decode("ab!c"))
    }
}
