import CNghttp2
@testable import HTTP2
import XCTest

/// The pairs a codec hands to nghttp2: kept in order past the room they started with, and
/// emptied without giving the room back.
final class NameValueListTests: XCTestCase {
    /// A pair whose name and value lengths say which it is (the pointers are not read).
    private func pair(_ index: Int) -> nghttp2_nv {
        nghttp2_nv(name: nil, value: nil, namelen: index, valuelen: index * 2, flags: UInt8(index % 3))
    }

    func testPairsPastTheFirstRoomComeBackInOrder() {
        let list = NameValueList(capacity: 2)
        for index in 0..<37 { list.append(pair(index)) }
        XCTAssertEqual(list.count, 37)
        XCTAssertGreaterThanOrEqual(list.capacity, 37)
        list.withPairs { pairs in
            XCTAssertEqual(pairs.map(\.namelen), Array(0..<37))
            XCTAssertEqual(pairs.map(\.valuelen), (0..<37).map { $0 * 2 })
            XCTAssertEqual(pairs.map(\.flags), (0..<37).map { UInt8($0 % 3) })
        }
    }

    func testAnEmptiedListKeepsItsRoomAndHoldsOnlyTheNextHeadsPairs() {
        let list = NameValueList(capacity: 4)
        for index in 0..<20 { list.append(pair(index)) }
        let grown = list.capacity
        list.removeAll()
        XCTAssertEqual(list.count, 0)
        list.withPairs { XCTAssertTrue($0.isEmpty) }
        list.append(pair(5))
        XCTAssertEqual(list.capacity, grown, "emptied, not freed")
        list.withPairs { XCTAssertEqual($0.map(\.namelen), [5]) }
    }
}
