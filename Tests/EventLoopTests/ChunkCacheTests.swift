import Glibc
import XCTest

@testable import EventLoop

/// The block cache behind libevent's and OpenSSL's allocators: blocks of the four size
/// classes are kept (a bounded number each) and handed out again; anything else goes to glibc.
final class ChunkCacheTests: XCTestCase {
    func testBlocksOfEachClassAreKeptAndHandedOutAgainUpToTheBound() throws {
        let slots = ChunkSlots()
        for sizeClass in ChunkCache.SizeClass.allCases {
            let bound = sizeClass.capacity
            let blocks = (0...bound).map { _ in malloc(sizeClass.blockSize)! }
            XCTAssertEqual(blocks.map { slots.keep($0) }, Array(repeating: true, count: bound) + [false],
                           "\(sizeClass): \(bound) blocks at most")
            for other in ChunkCache.SizeClass.allCases where other != sizeClass {
                XCTAssertNil(slots.take(other), "a \(sizeClass) block is not handed out as \(other)")
            }
            var taken: [UnsafeMutableRawPointer] = []
            while let block = slots.take(sizeClass) { taken.append(block) }
            XCTAssertEqual(taken.count, bound, "\(sizeClass): each kept block comes back once")
            XCTAssertEqual(Set(taken), Set(blocks.prefix(bound)))
            for block in blocks { free(block) }
        }
    }

    func testRequestsMapToTheClassThatServesThem() {
        XCTAssertEqual(ChunkCache.SizeClass(request: 1024), .chain)
        XCTAssertEqual(ChunkCache.SizeClass(request: 16 * 1024), .record, "libevent's 16 KiB read chunk")
        XCTAssertEqual(ChunkCache.SizeClass(request: TLSLayer.readBufferLength), .tlsRead, "OpenSSL's read buffer")
        XCTAssertEqual(ChunkCache.SizeClass(request: 16_712), .record, "OpenSSL's write buffer")
        XCTAssertEqual(ChunkCache.SizeClass(request: 128 * 1024), .large)
        for size in [0, 40, 1000, 1025, 16 * 1024 - 1, ChunkCache.recordBlock + 1, 64 * 1024 - 1, 64 * 1024 + 1] {
            XCTAssertNil(ChunkCache.SizeClass(request: size), "\(size) bytes go to glibc")
        }
        // Every request of a class fits in its block.
        XCTAssertGreaterThanOrEqual(ChunkCache.SizeClass.record.blockSize, 16_712)
    }

    func testBlocksOfOtherSizesAreNeitherKeptNorHandedOut() {
        let slots = ChunkSlots()
        // A 16 KiB block allocated before the cache was installed (not as a record block).
        for size in [40, 1000, 2048, 16 * 1024, 48 * 1024, 96 * 1024] {
            let block = malloc(size)!
            XCTAssertFalse(slots.keep(block), "\(size) bytes")
            free(block)
        }
        for sizeClass in ChunkCache.SizeClass.allCases { XCTAssertNil(slots.take(sizeClass)) }
    }
}
