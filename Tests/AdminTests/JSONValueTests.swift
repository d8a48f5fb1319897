import Admin
import Foundation
import TestSupport
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
