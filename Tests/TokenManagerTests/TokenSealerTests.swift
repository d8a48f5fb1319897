import TokenManager
import XCTest

/// Sealed shared-cache values: round trip, nothing readable inside, and every way a value fails to open.
final class TokenSealerTests: XCTestCase {
    private let sealer = TokenSealer(key: [UInt8](repeating: 0x11, count: 32))!
    private let entry = SharedTokenEntry(value: "SENTINEL-TOKEN-value", issuedAtWall: 1_800_000_000.25, lifetime: .seconds(3600))

    func testRoundTripAndNoPlaintext() throws {
        let sealed = try XCTUnwrap(sealer.seal(entry, cacheKey: "k1"))
        XCTAssertEqual(sealed.first, 1, "version byte")
        XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: "SENTINEL"))
        let opened = try XCTUnwrap(sealer.open(sealed, cacheKey: "k1"))
        XCTAssertEqual(opened.value, entry.value)
        XCTAssertEqual(opened.issuedAtWall, entry.issuedAtWall, accuracy: 0.001)
        XCTAssertEqual(opened.lifetime, .seconds(3600))
        XCTAssertEqual(opened.sealed, sealed)
        XCTAssertNotEqual(sealer.seal(entry, cacheKey: "k1"), sealed, "a fresh nonce each time")
    }

    func testValuesThatDoNotOpen() throws {
        let sealed = try XCTUnwrap(sealer.seal(entry, cacheKey: "k1"))
        XCTAssertNil(sealer.open(sealed, cacheKey: "k2"), "copied to another key")
        XCTAssertNil(TokenSealer(key: [UInt8](repeating: 0x12, count: 32))!.open(sealed, cacheKey: "k1"), "another encryption key")
        var otherVersion = sealed
        otherVersion[0] = 2
        XCTAssertNil(sealer.open(otherVersion, cacheKey: "k1"))
        for index in stride(from: 1, to: sealed.count, by: 3) {
            var tampered = sealed
            tampered[index] ^= 1
            XCTAssertNil(sealer.open(tampered, cacheKey: "k1"), "byte \(index)")
        }
        XCTAssertNil(sealer.open(Array(sealed.prefix(20)), cacheKey: "k1"))
        XCTAssertNil(sealer.open([], cacheKey: "k1"))
        XCTAssertNil(sealer.open(Array("Bearer SENTINEL-TOKEN-value".utf8), cacheKey: "k1"), "a value written by hand")
        XCTAssertNil(TokenSealer(key: [1, 2, 3]))
    }

    func testEntryTimelineOnTheLocalClock() {
        let now = ContinuousClock.now
        let issued = entry.issued(now: now, wallNow: 1_800_000_010.25)
        XCTAssertEqual(issued.issuedAt, now - .seconds(10))
        XCTAssertEqual(issued.lifetime, .seconds(3600))
        let back = SharedTokenEntry(issued, now: now, wallNow: 1_800_000_010.25)
        XCTAssertEqual(back.issuedAtWall, entry.issuedAtWall, accuracy: 0.001)
    }

    func testARefreshTokenTravelsInFormat2AndEveryOtherEntryStaysFormat1() throws {
        var withRefresh = entry
        withRefresh.refreshToken = "SENTINEL-REFRESH-value"
        let sealed = try XCTUnwrap(sealer.seal(withRefresh, cacheKey: "k1"))
        XCTAssertEqual(sealed.first, 2)
        XCTAssertNil(String(decoding: sealed, as: UTF8.self).range(of: "SENTINEL"))
        let opened = try XCTUnwrap(sealer.open(sealed, cacheKey: "k1"))
        XCTAssertEqual(opened.value, entry.value)
        XCTAssertEqual(opened.refreshToken, "SENTINEL-REFRESH-value")
        var relabelled = sealed
        relabelled[0] = 1
        XCTAssertNil(sealer.open(relabelled, cacheKey: "k1"), "the version is authenticated")
        XCTAssertEqual(sealer.seal(entry, cacheKey: "k1")?.first, 1)
        XCTAssertNil(try XCTUnwrap(sealer.open(try XCTUnwrap(sealer.seal(entry, cacheKey: "k1")), cacheKey: "k1")).refreshToken)
    }
}
