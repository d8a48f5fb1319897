import HTTP1
import XCTest

/// What a keeper of storage for reuse gets back, and what it lets go.
final class SpareListTests: XCTestCase {
    func testItKeepsUpToItsLimitAndHandsBackTheNewestFirst() {
        var list = SpareList<[UInt8]>(limit: 2)
        XCTAssertNil(list.take(), "nothing kept yet")
        XCTAssertTrue(list.keep([1]))
        XCTAssertTrue(list.keep([2]))
        XCTAssertFalse(list.keep([3]), "beyond the limit: not kept")
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.take(), [2])
        XCTAssertEqual(list.take(), [1])
        XCTAssertNil(list.take(), "each is handed over once")
    }

    func testWhatIsTakenIsNoLongerSharedSoItIsReusedInPlace() {
        var list = SpareList<[UInt8]>(limit: 1)
        var bytes = [UInt8](repeating: 7, count: 100)
        bytes.reserveCapacity(1000)
        list.keep(bytes)
        bytes = []
        var taken = list.take()!
        let capacity = taken.capacity
        taken.removeAll(keepingCapacity: true)
        taken.append(1)
        XCTAssertEqual(taken.capacity, capacity, "the kept storage serves again")
        XCTAssertEqual(list.count, 0)
    }

    func testTrimKeepsTheNewestAndSaysWhenFull() {
        var list = SpareList<Int>(limit: 4)
        for n in 0..<4 { list.keep(n) }
        XCTAssertTrue(list.isFull)
        list.trim(to: 2)
        XCTAssertFalse(list.isFull)
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.take(), 3, "the newest stay")
        XCTAssertEqual(list.take(), 2)
        XCTAssertNil(list.take())
        list.trim(to: 2)
        XCTAssertEqual(list.count, 0, "trimming fewer than the count keeps them")
    }

    func testRemoveAllLetsEverythingGo() {
        var list = SpareList<Int>(limit: 4)
        for n in 0..<4 { list.keep(n) }
        list.removeAll()
        XCTAssertEqual(list.count, 0)
        XCTAssertNil(list.take())
        XCTAssertTrue(list.keep(9), "room again")
    }
}
