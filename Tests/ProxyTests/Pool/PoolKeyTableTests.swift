import XCTest
@testable import Proxy

final class PoolKeyTableTests: XCTestCase {
    func testAnIndexFindsItsKeyAndNeverAnotherOnceTheSlotIsReused() {
        var table = PoolKeyTable()
        XCTAssertNil(table.slot(of: "http|a|80|", index: 0), "no key yet")
        let a = table.slotMaking("http|a|80|")
        XCTAssertEqual(table.slot(of: "http|a|80|", index: 0), a)
        XCTAssertEqual(table.slot(of: "http|a|80|", index: 0), a, "found again through the remembered index")
        // The key is dropped (no connection) and its slot goes to another name.
        table.dropIfUnused(a)
        XCTAssertNil(table.slot(of: "http|a|80|", index: 0), "a dropped key is gone, whatever the index remembers")
        let b = table.slotMaking("http|b|80|")
        XCTAssertEqual(b, a, "the slot is reused")
        XCTAssertNil(table.slot(of: "http|a|80|", index: 0), "the reused slot is b's, not a's")
        // A reloaded configuration numbering b's key 0 as well, and a new key with a far index.
        XCTAssertEqual(table.slot(of: "http|b|80|", index: 0), b)
        let c = table.slotMaking("http|c|80|")
        XCTAssertEqual(table.slot(of: "http|c|80|", index: 7), c)
        XCTAssertEqual(table.slot(of: "http|b|80|", index: -1), b, "no index: found by name")
    }
}
