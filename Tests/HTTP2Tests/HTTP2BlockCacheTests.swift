import CNghttp2
import HTTP1
@testable import HTTP2
import XCTest

/// nghttp2's allocator: blocks of a size class come back for the next allocation of that
/// class, bounded; larger blocks and what does not fit are freed; reallocation keeps contents;
/// and a codec whose session allocates from it serves streams as one without it does.
final class HTTP2BlockCacheTests: XCTestCase {
    func testAFreedBlockServesTheNextAllocationOfItsClassOnly() throws {
        let cache = HTTP2BlockCache()
        let first = try XCTUnwrap(cache.allocate(100))
        cache.release(first)
        XCTAssertEqual(cache.keptCount, 1)
        XCTAssertNotEqual(cache.allocate(40), first, "a 64-byte block does not serve from the 128-byte class")
        XCTAssertEqual(cache.allocate(128), first, "the 128-byte class's kept block comes back")
        XCTAssertEqual(cache.keptCount, 0)
    }

    func testBlocksLargerThanTheClassesAreFreedNotKept() throws {
        let cache = HTTP2BlockCache()
        let large = try XCTUnwrap(cache.allocate(10_000))
        large.initializeMemory(as: UInt8.self, repeating: 0xAB, count: 10_000)
        cache.release(large)
        XCTAssertEqual(cache.keptCount, 0)
        cache.release(nil)
        XCTAssertEqual(cache.keptCount, 0)
    }

    /// The functions nghttp2 calls: its frees of nothing (half of them, in a gRPC call) return
    /// at once and keep nothing; a block it frees is kept for its next allocation of the class.
    func testNghttp2sFreeFunctionKeepsItsBlocksAndIgnoresNothing() throws {
        let cache = HTTP2BlockCache()
        let mem = cache.mem
        let free = try XCTUnwrap(mem.free), malloc = try XCTUnwrap(mem.malloc)
        free(nil, mem.mem_user_data)
        XCTAssertEqual(cache.keptCount, 0, "freeing nothing keeps nothing")
        let block = try XCTUnwrap(malloc(200, mem.mem_user_data))
        free(block, mem.mem_user_data)
        XCTAssertEqual(cache.keptCount, 1)
        free(nil, mem.mem_user_data)
        XCTAssertEqual(cache.keptCount, 1, "a free of nothing leaves what is kept alone")
        XCTAssertEqual(malloc(256, mem.mem_user_data), block, "the kept block serves the next allocation of its class")
    }

    func testWhatIsKeptIsBoundedAndTrimmed() {
        let cache = HTTP2BlockCache()
        let blocks = (0..<600).compactMap { _ in cache.allocate(32) }
        for block in blocks { cache.release(block) }
        XCTAssertEqual(cache.keptCount, HTTP2BlockCache.capacity(of: 0), "the rest went back to the C library")
        cache.trim(to: 8)
        XCTAssertEqual(cache.keptCount, 8)
    }

    func testReallocationKeepsTheContentsAndGrowsOutOfItsClass() throws {
        let cache = HTTP2BlockCache()
        let block = try XCTUnwrap(cache.allocate(50))
        for index in 0..<50 { block.storeBytes(of: UInt8(index), toByteOffset: index, as: UInt8.self) }
        XCTAssertEqual(cache.reallocate(block, 64), block, "room within its class: the same block")
        let grown = try XCTUnwrap(cache.reallocate(block, 3000))
        XCTAssertEqual((0..<50).map { grown.load(fromByteOffset: $0, as: UInt8.self) }, (0..<50).map(UInt8.init))
        XCTAssertEqual(cache.keptCount, 1, "the old block is kept for its class")
        let larger = try XCTUnwrap(cache.reallocate(grown, 5000))
        XCTAssertEqual((0..<50).map { larger.load(fromByteOffset: $0, as: UInt8.self) }, (0..<50).map(UInt8.init))
        cache.release(larger)
        XCTAssertNotNil(cache.reallocate(nil, 10), "nil is a new block")
    }

    func testCallocZeroesAndRefusesAnOverflow() throws {
        let cache = HTTP2BlockCache()
        // (The functions hold the cache unretained: kept alive here as a codec keeps it.)
        try withExtendedLifetime(cache) {
            let mem = cache.mem
            // A used block comes back for the next allocation of its class: calloc must zero it.
            let used = try XCTUnwrap(mem.malloc(200, mem.mem_user_data))
            used.initializeMemory(as: UInt8.self, repeating: 0xFF, count: 200)
            mem.free(used, mem.mem_user_data)
            let zeroed = try XCTUnwrap(mem.calloc(10, 20, mem.mem_user_data))
            XCTAssertEqual(zeroed, used)
            XCTAssertTrue((0..<200).allSatisfy { zeroed.load(fromByteOffset: $0, as: UInt8.self) == 0 })
            XCTAssertNil(mem.calloc(Int.max, 2, mem.mem_user_data))
            mem.free(zeroed, mem.mem_user_data)
        }
    }

    /// A request and its response through two codecs whose sessions allocate from one cache
    /// (a worker's app side and upstream side), streams after streams: the blocks go round.
    func testCodecsServeStreamsWithTheirSessionsAllocatingFromIt() throws {
        let cache = HTTP2BlockCache()
        let client = HTTP2Codec(role: .client, blocks: cache)
        let server = HTTP2Codec(role: .server, blocks: cache)
        func exchange() throws -> [HTTP2Event] {
            var events: [HTTP2Event] = []
            for _ in 0..<4 {
                var bytes: [UInt8] = []
                try client.send { bytes.append(contentsOf: $0) }
                events += try bytes.withUnsafeBytes { try server.receive($0) }
                bytes = []
                try server.send { bytes.append(contentsOf: $0) }
                events += try bytes.withUnsafeBytes { try client.receive($0) }
            }
            return events
        }
        _ = try exchange()
        for round in 0..<20 {
            let head = HTTP2Head(method: "GET", scheme: "https", authority: "api.test", path: "/\(round)",
                                 fields: HTTPFields([HTTPField(name: "x-round", value: "\(round)")]))
            let stream = try client.submitRequest(head, endStream: true)
            let events = try exchange()
            let received = events.compactMap { event -> HTTP2Head? in
                if case .head(stream, let head) = event { return head }
                return nil
            }
            XCTAssertEqual(received.first?.path, "/\(round)")
            XCTAssertEqual(received.first?.firstField("x-round"), "\(round)")
        }
        XCTAssertGreaterThan(cache.keptCount, 0, "freed blocks are kept for the next streams")
    }
}

extension HTTP2BlockCacheTests {
    func testEachSizeGoesToTheSmallestClassThatHoldsIt() {
        let expected: [(Int, Int?)] = [(0, 0), (1, 0), (64, 0), (65, 1), (128, 1), (129, 2), (256, 2), (257, 3), (512, 3),
                                       (513, 4), (1024, 4), (1025, 5), (2048, 5), (2049, nil), (1 << 40, nil)]
        for (size, index) in expected {
            XCTAssertEqual(HTTP2BlockCache.classIndex(for: size), index, "\(size) bytes")
            if let index { XCTAssertGreaterThanOrEqual(HTTP2BlockCache.classSize(index), size) }
        }
    }
}
