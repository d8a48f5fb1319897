import TokenManager
import XCTest

final class TokenCacheTests: XCTestCase {
    private let now = ContinuousClock.now

    private func issued(_ value: String) -> IssuedToken {
        IssuedToken(value: value, issuedAt: now, lifetime: .seconds(60))
    }

    private func key(_ name: String, scope: String? = nil) -> TokenCacheKey {
        TokenCacheKey(credential: name, scope: scope)
    }

    func testEvictsTheLeastRecentlyUsedAtCapacity() {
        let cache = TokenCache(capacity: 3)
        cache.store(issued("1"), for: key("a"))
        cache.store(issued("2"), for: key("b"))
        cache.store(issued("3"), for: key("c"))
        XCTAssertEqual(cache.token(for: key("a"))?.token.value, "1")  // a is now most recent
        cache.store(issued("4"), for: key("d"))  // evicts b
        XCTAssertEqual(cache.count, 3)
        XCTAssertNil(cache.token(for: key("b")))
        XCTAssertEqual(cache.keysByRecency, [key("c"), key("a"), key("d")])
        cache.store(issued("3bis"), for: key("c"))  // update refreshes recency, no eviction
        XCTAssertEqual(cache.keysByRecency, [key("a"), key("d"), key("c")])
        XCTAssertEqual(cache.token(for: key("c"))?.token.value, "3bis")
        cache.store(issued("5"), for: key("e"))
        XCTAssertEqual(cache.keysByRecency, [key("d"), key("c"), key("e")])
    }

    func testVariantsAreSeparateEntriesAndRemoveForgets() {
        let cache = TokenCache()
        XCTAssertEqual(cache.capacity, 100)
        cache.store(issued("r"), for: key("a", scope: "read"))
        cache.store(issued("w"), for: key("a", scope: "write"))
        XCTAssertEqual(cache.token(for: key("a", scope: "read"))?.token.value, "r")
        XCTAssertEqual(cache.token(for: key("a", scope: "write"))?.token.value, "w")
        XCTAssertNil(cache.token(for: key("a")))
        cache.remove(key("a", scope: "read"))
        XCTAssertNil(cache.token(for: key("a", scope: "read")))
        XCTAssertEqual(cache.count, 1)
    }

    func testCapacityHundredKeepsTheLastHundred() {
        let cache = TokenCache(capacity: 100)
        for i in 0..<150 { cache.store(issued("\(i)"), for: key("c\(i)")) }
        XCTAssertEqual(cache.count, 100)
        XCTAssertNil(cache.token(for: key("c49")))
        XCTAssertEqual(cache.token(for: key("c50"))?.token.value, "50")
    }
}
