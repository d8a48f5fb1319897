import Glibc
import XCTest

@testable import EventLoop

/// The chunk cache behind libevent's allocator: read chunks of the two sizes are kept (a
/// bounded number) and handed out again; anything else goes to glibc.
final class ChunkCacheTests: XCTestCase {
    func testChunksOfTheReadSizesAreKeptAndHandedOutAgainUpToTheBound() throws {
        let slots = ChunkSlots()
        let small = (0..<5).map { _ in malloc(ChunkCache.smallSize)! }
        XCTAssertEqual(small.map { slots.keep($0) }, [true, true, true, true, false], "four small chunks at most")
        var taken: [UnsafeMutableRawPointer] = []
        while let chunk = slots.take(ChunkCache.smallSize) { taken.append(chunk) }
        XCTAssertEqual(Set(taken), Set(small.prefix(4)), "the kept chunks come back, each once")

        let large = (0..<3).map { _ in malloc(ChunkCache.largeSize)! }
        XCTAssertEqual(large.map { slots.keep($0) }, [true, true, false], "two large chunks at most")
        XCTAssertNil(slots.take(ChunkCache.smallSize), "a large chunk is not handed out for a small allocation")
        let first = try XCTUnwrap(slots.take(ChunkCache.largeSize))
        let second = try XCTUnwrap(slots.take(ChunkCache.largeSize))
        XCTAssertEqual(Set([first, second]), Set(large.prefix(2)))
        XCTAssertNil(slots.take(ChunkCache.largeSize))

        // Other sizes are neither kept nor handed out.
        let other = malloc(1000)!
        XCTAssertFalse(slots.keep(other))
        XCTAssertNil(slots.take(1000))
        XCTAssertNil(slots.take(ChunkCache.smallSize - 1))
        for chunk in small + large + [other] { free(chunk) }
    }
}
