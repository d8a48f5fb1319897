import HTTPMessage
import Foundation
import TestSupport
import XCTest

final class FormDecodingTests: XCTestCase {
    func testItems() {
        XCTAssertEqual(FormDecoding.items(Substring("a=1&b=x+y&&c&d=%2B%26%3D&e=%zz&f=%E2%80%A6")), [
            QueryItem(name: "a", value: "1"), QueryItem(name: "b", value: "x y"), QueryItem(name: "c", value: ""),
            QueryItem(name: "d", value: "+&="), QueryItem(name: "e", value: "%zz"), QueryItem(name: "f", value: "…"),
        ])
        XCTAssertEqual(FormDecoding.items(Array("k=v%".utf8)).first("k"), "v%")
    }
}
