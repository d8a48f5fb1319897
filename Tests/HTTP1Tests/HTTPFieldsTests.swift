import HTTP1
import XCTest

final class HTTPFieldsTests: XCTestCase {
    private var sample: HTTPFields {
        HTTPFields([
            HTTPField(name: "Host", value: "a"),
            HTTPField(name: "Connection", value: "Keep-Alive, ,Upgrade"),
            HTTPField(name: "connection", value: " TE ,"),
            HTTPField(name: "X-Dup", value: "1"),
            HTTPField(name: "x-dup", value: "2"),
        ])
    }

    func testLookups() {
        let fields = sample
        XCTAssertEqual(fields.count, 5)
        XCTAssertEqual(fields.first("HOST"), "a")
        XCTAssertNil(fields.first("missing"))
        XCTAssertEqual(fields.values("X-DUP"), ["1", "2"])
        XCTAssertTrue(fields.contains("x-Dup"))
        XCTAssertFalse(fields.contains("x-dupe"))
        XCTAssertEqual(fields.tokens("CONNECTION"), ["keep-alive", "upgrade", "te"])
        XCTAssertEqual(fields.tokens("missing"), [])
        XCTAssertEqual(fields.map(\.value), ["a", "Keep-Alive, ,Upgrade", " TE ,", "1", "2"])
    }

    func testMutation() {
        var fields = sample
        fields.removeAll("X-DUP")
        XCTAssertEqual(fields.count, 3)
        fields.append("Via", "1.1 sidecar")
        XCTAssertEqual(fields.fields.last, HTTPField(name: "Via", value: "1.1 sidecar"))
        fields.removeAll(where: { $0.name.lowercased() == "connection" })
        XCTAssertEqual(fields.map(\.name), ["Host", "Via"])
    }
}
