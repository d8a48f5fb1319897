import JSON
import Foundation
import XCTest

final class JSONValueTests: XCTestCase {
    func testSerializationIsOrderedAndCompact() {
        let value = JSONValue.object([
            ("b", .int(-3)), ("a", .array([.bool(true), .null, .double(2.5), .double(.nan)])), ("s", .string(nil)),
        ])
        XCTAssertEqual(value.text, #"{"b":-3,"a":[true,null,2.5,null],"s":null}"#)
    }

    func testStringEscapingRoundTripsThroughFoundation() throws {
        let nasty = "quote\" backslash\\ newline\n tab\t cr\r nul\u{0} bell\u{7} del\u{7F} unicode é 😀 …"
        let data = Data(JSONValue.array([.string(nasty)]).serialized)
        let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String])
        XCTAssertEqual(parsed, [nasty])
    }

    func testEquality() {
        XCTAssertEqual(JSONValue.object([("a", .int(1))]), .object([("a", .int(1))]))
        XCTAssertNotEqual(JSONValue.object([("a", .int(1)), ("b", .int(2))]), .object([("b", .int(2)), ("a", .int(1))]))
    }
}

/// The one JSON string escaper (admin answers, proxy error bodies, log lines).
final class JSONStringTests: XCTestCase {
    func testEscapesQuotesBackslashesAndControlsAndKeepsUTF8() {
        XCTAssertEqual(JSONString.quoted("plain"), "\"plain\"")
        XCTAssertEqual(JSONString.quoted("a\"b\\c"), #""a\"b\\c""#)
        XCTAssertEqual(JSONString.quoted("\n\r\t\u{0}\u{1f}\u{7f}"), #""\n\r\t\u0000\u001f\u007f""#)
        XCTAssertEqual(JSONString.quoted("héllo ✓ 🎉"), "\"héllo ✓ 🎉\"")
        XCTAssertEqual(JSONString.quoted(""), "\"\"")
    }

    func testEveryEscapedStringParsesBackToItself() throws {
        var samples = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        samples += ["mixed \"quotes\" and \\ and \u{1} in a long run of text", String(repeating: "x", count: 10_000) + "\""]
        for sample in samples {
            let data = Data("[\(JSONString.quoted(sample))]".utf8)
            XCTAssertEqual(try JSONSerialization.jsonObject(with: data) as? [String], [sample])
        }
    }
}
