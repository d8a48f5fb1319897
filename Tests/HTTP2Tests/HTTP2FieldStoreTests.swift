import HTTP1
@testable import HTTP2
import XCTest

/// A head's fields in one block of memory: grown as fields come, shared between copies until one
/// of them changes.
final class HTTP2FieldStoreTests: XCTestCase {
    private func add(_ name: String, _ value: String, to head: inout HTTP2Head) {
        var recent = HTTP2Head.RecentValues()
        Array(name.utf8).withUnsafeBufferPointer { n in
            Array(value.utf8).withUnsafeBufferPointer { head.add(name: n, value: $0, recent: &recent) }
        }
    }

    private func fields(of head: HTTP2Head) -> [String] {
        var all: [String] = []
        head.forEachField { name, value in
            all.append(String(decoding: name, as: UTF8.self) + ": " + String(decoding: value, as: UTF8.self))
        }
        return all
    }

    func testFieldsDecodedPastTheFirstRoomComeBackWholeAndInOrder() {
        var head = HTTP2Head()
        // Past the first room (256 bytes, 8 fields) several times over, and an empty value.
        let expected = (0..<40).map { ("x-field-\($0)", $0 == 7 ? "" : String(repeating: Character(UnicodeScalar(97 + $0 % 26)!), count: 90)) }
        for (name, value) in expected { add(name, value, to: &head) }
        XCTAssertEqual(fields(of: head), expected.map { $0.0 + ": " + $0.1 })
        XCTAssertEqual(head.fieldCount, 40)
        XCTAssertEqual(head.firstField("x-field-39"), expected[39].1)
        XCTAssertEqual(head.firstField("x-field-7"), "")
        XCTAssertNil(head.firstField("x-field-40"))
        XCTAssertFalse(head.isSmall, "a head of 3.5 KiB of fields is not kept for reuse")
    }

    func testACopyKeepsItsFieldsWhileTheOtherIsAddedToOrCleared() {
        var original = HTTP2Head()
        add("content-type", "application/grpc", to: &original)
        let copy = original
        add("te", "trailers", to: &original)
        XCTAssertEqual(fields(of: copy), ["content-type: application/grpc"])
        XCTAssertEqual(fields(of: original), ["content-type: application/grpc", "te: trailers"])
        var cleared = copy
        cleared.clear()
        XCTAssertEqual(cleared.fieldCount, 0)
        XCTAssertEqual(fields(of: copy), ["content-type: application/grpc"])
        // Cleared, its storage takes new fields without showing the old ones.
        add("accept", "*/*", to: &cleared)
        XCTAssertEqual(fields(of: cleared), ["accept: */*"])
        XCTAssertEqual(fields(of: copy), ["content-type: application/grpc"])
    }

    func testHeadsAreEqualByTheirFieldsNotByHowTheyWereMade() {
        var decoded = HTTP2Head()
        add("a", "1", to: &decoded)
        add("bb", "22", to: &decoded)
        var fromFields = HTTP2Head(status: 200)
        fromFields.status = nil
        fromFields.fields = HTTPFields([HTTPField(name: "a", value: "1"), HTTPField(name: "bb", value: "22")])
        XCTAssertEqual(decoded, fromFields)
        // The same bytes split differently are other fields.
        var split = HTTP2Head()
        add("a1", "", to: &split)
        add("bb", "22", to: &split)
        XCTAssertNotEqual(decoded, split)
        // Replacing the fields of a shared head leaves the other as it was.
        var replaced = decoded
        replaced.fields = HTTPFields([HTTPField(name: "c", value: "3")])
        XCTAssertEqual(fields(of: replaced), ["c: 3"])
        XCTAssertEqual(fields(of: decoded), ["a: 1", "bb: 22"])
    }
}
