import XCTest
@testable import Proxy

/// ``SlotMap`` and ``SlotMirror``: the upstream pool's connections by ID, without hashing.
final class SlotMapTests: XCTestCase {
    func testIDsAreNeverReusedAndAnOldIDFindsNothingInItsReusedSlot() {
        var map = SlotMap<String>()
        XCTAssertEqual([map.insert("a"), map.insert("b")], [0, 1], "sequential while nothing was freed")
        XCTAssertEqual(map.removeValue(forID: 0), "a")
        XCTAssertNil(map.removeValue(forID: 0), "a second removal finds nothing")
        let c = map.insert("c")
        XCTAssertNotEqual(c, 0, "the freed slot is reused under a new ID")
        XCTAssertNil(map[0], "the old ID does not reach the slot's new value")
        XCTAssertEqual(map[c], "c")
        XCTAssertNil(map.removeValue(forID: 0))
        XCTAssertEqual(map[c], "c", "removing under the old ID leaves the new value alone")
        XCTAssertEqual(map.count, 2)
        XCTAssertEqual(Set(map.keys), [c, 1])
        XCTAssertNil(map[1 << 40], "an ID beyond every slot finds nothing")
    }

    func testValuesAreModifiedInPlaceAndRemovalFreesTheSlot() {
        var map = SlotMap<[Int]>()
        let id = map.insert([1])
        XCTAssertEqual(map.modify(id) { $0.append(2); return $0.count }, 2)
        XCTAssertEqual(map[id], [1, 2])
        XCTAssertEqual(map.removeValue(forID: id), [1, 2])
        XCTAssertTrue(map.isEmpty)
        XCTAssertEqual(map.nextID, 1 << 32, "the slot comes back with the next generation")
        XCTAssertEqual(map.insert([3]), 1 << 32)
    }

    func testAMirrorKeepsValuesUnderAnotherMapsIDs() {
        var map = SlotMap<Int>()
        var mirror = SlotMirror<String>()
        let first = map.insert(1)
        mirror[first] = "first"
        map.removeValue(forID: first)
        let second = map.insert(2)
        mirror[second] = "second"
        XCTAssertNil(mirror[first], "the slot's older ID finds nothing")
        mirror[first] = nil
        XCTAssertEqual(mirror[second], "second", "removing under the older ID leaves the newer value")
        XCTAssertEqual(mirror.removeValue(forID: second), "second")
        XCTAssertNil(mirror[second])
        mirror[7] = "far"
        XCTAssertEqual(mirror[7], "far", "a slot beyond the stored ones grows the mirror")
    }
}
