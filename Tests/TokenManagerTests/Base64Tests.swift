import Foundation
@testable import TokenManager
import XCTest

final class Base64Tests: XCTestCase {
    /// Every length around the 3-byte groups, against Foundation's encoder (an independent one).
    func testEncodingMatchesFoundationForEveryRemainder() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...67 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
            XCTAssertEqual(Base64.encode(bytes), standard, "length \(length)")
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(Base64.encodeURL(bytes), url, "length \(length)")
            XCTAssertEqual(Base64.decodeURL(Substring(Base64.encodeURL(bytes))), bytes, "round trip, length \(length)")
        }
        XCTAssertEqual(Base64.encodeURL([0xFB, 0xFF]), "-_8", "the URL alphabet's two symbols")
        XCTAssertEqual(Base64.encode([0xFB, 0xFF]), "+/8=")
    }
}
