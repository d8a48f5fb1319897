import CNghttp2
import Glibc

/// nghttp2's allocator for the sessions of one loop (a worker's): the C library's, with the
/// blocks of a few sizes that nghttp2 frees kept for its next allocations instead.
///
/// nghttp2 allocates and frees a dozen blocks for each stream — the stream, its outbound items
/// and frames, each header block's name/value copy, HPACK table entries — most under 1 KiB.
/// Under load more of one size are alive at once than glibc's per-thread cache keeps (seven a
/// size), and the rest went through its general free path: 2k instructions of a gRPC call at
/// c=50 were glibc's allocator, ~140 for each block; taken from here, a block costs a few
/// dozen. (nghttpx links jemalloc for the same reason.)
///
/// Each block carries a 16-byte header (its size class, or its size when it has none), so a
/// free needs no lookup. What is kept is bounded (``capacity(of:)``: 450 KiB at most per
/// cache). Not used under AddressSanitizer (`ASAN_OPTIONS` set: ``forSessions()``): a kept
/// block would hide a use after free of it.
///
/// Confined to its loop's thread, as every session it serves: no lock. Each session keeps the
/// cache alive (its codec holds it) while nghttp2 may free into it.
public final class HTTP2BlockCache {
    /// How many size classes there are: 64 bytes to 2 KiB, doubling.
    static let classCount = 6
    /// Usable bytes of class `index`.
    @inline(__always)
    static func classSize(_ index: Int) -> Int { 64 << index }
    /// The header before each block: its class (or -1), then its usable size.
    static let headerSize = 16

    /// Heads of the free lists, one per class (each kept block's first word links the next).
    private let heads: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// How many blocks each list holds.
    private let counts: UnsafeMutablePointer<Int>

    /// An empty cache.
    public init() {
        heads = .allocate(capacity: Self.classCount)
        heads.initialize(repeating: nil, count: Self.classCount)
        counts = .allocate(capacity: Self.classCount)
        counts.initialize(repeating: 0, count: Self.classCount)
    }

    deinit {
        trim(to: 0)
        heads.deallocate()
        counts.deallocate()
    }

    /// A cache for a loop's sessions, or nil under AddressSanitizer (nghttp2 then allocates
    /// with the C library's own functions).
    public static func forSessions() -> HTTP2BlockCache? {
        getenv("ASAN_OPTIONS") == nil ? HTTP2BlockCache() : nil
    }

    /// Most blocks kept of class `index` (fewer of the larger).
    static func capacity(of index: Int) -> Int {
        switch index {
        case 0, 1: 512
        case 2: 256
        case 3: 128
        default: 64
        }
    }

    /// Blocks kept now, over all classes (tests).
    var keptCount: Int { (0..<Self.classCount).reduce(0) { $0 + counts[$1] } }

    /// Frees all but `count` kept blocks of each class (all of them as the cache goes).
    func trim(to count: Int) {
        for index in 0..<Self.classCount {
            while counts[index] > count, let block = heads[index] {
                heads[index] = block.load(as: UnsafeMutableRawPointer?.self)
                counts[index] -= 1
                free(block - Self.headerSize)
            }
        }
    }

    /// The class serving `size` bytes, if one does: the power of two it rounds up to, from 64.
    /// (By the highest bit set, not a chain of comparisons: it runs at every allocation.)
    @inline(__always)
    static func classIndex(for size: Int) -> Int? {
        guard size > 0 else { return 0 }
        let index = Int.bitWidth &- ((size &- 1) | 63).leadingZeroBitCount &- 6
        return index < classCount ? index : nil
    }

    /// A block of at least `size` bytes (nil when the C library has none).
    func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        guard let index = Self.classIndex(for: size) else {
            guard let base = malloc(Self.headerSize + size) else { return nil }
            base.storeBytes(of: -1, as: Int.self)
            base.storeBytes(of: size, toByteOffset: 8, as: Int.self)
            return base + Self.headerSize
        }
        if let block = heads[index] {
            heads[index] = block.load(as: UnsafeMutableRawPointer?.self)
            counts[index] -= 1
            return block
        }
        guard let base = malloc(Self.headerSize + Self.classSize(index)) else { return nil }
        base.storeBytes(of: index, as: Int.self)
        base.storeBytes(of: Self.classSize(index), toByteOffset: 8, as: Int.self)
        return base + Self.headerSize
    }

    /// Takes back `block` (from ``allocate(_:)``; nil does nothing): kept when its class has room.
    func release(_ block: UnsafeMutableRawPointer?) {
        guard let block else { return }
        let index = (block - Self.headerSize).load(as: Int.self)
        if index >= 0, counts[index] < Self.capacity(of: index) {
            block.storeBytes(of: heads[index], as: UnsafeMutableRawPointer?.self)
            heads[index] = block
            counts[index] += 1
            return
        }
        free(block - Self.headerSize)
    }

    /// `block` (nil: a new one) with room for `size` bytes, its contents kept up to there.
    func reallocate(_ block: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let block else { return allocate(size) }
        let usable = (block - Self.headerSize).load(fromByteOffset: 8, as: Int.self)
        if size <= usable { return block }
        guard let moved = allocate(size) else { return nil }
        moved.copyMemory(from: block, byteCount: usable)
        release(block)
        return moved
    }

    /// nghttp2's allocator functions, with this cache as their user data (unretained: the
    /// codec that makes a session with it holds the cache as long as the session).
    var mem: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: Unmanaged.passUnretained(self).toOpaque(),
            malloc: { size, user in HTTP2BlockCache.with(user) { $0.allocate(size) } },
            // (nghttp2 frees nothing about half the time, a gRPC call's ten of twenty: that
            // returns before the cache is looked up.)
            free: { block, user in
                guard let block else { return }
                HTTP2BlockCache.with(user) { $0.release(block) }
            },
            calloc: { count, size, user in
                let (total, overflow) = count.multipliedReportingOverflow(by: size)
                guard !overflow, let block = HTTP2BlockCache.with(user, { $0.allocate(total) }) else { return nil }
                block.initializeMemory(as: UInt8.self, repeating: 0, count: total)
                return block
            },
            realloc: { block, size, user in HTTP2BlockCache.with(user) { $0.reallocate(block, size) } })
    }

    /// `body` called with the cache an allocator function's user data is, not retained for the
    /// call (a session frees into it only while its codec, which holds it, is alive).
    @inline(__always)
    private static func with<R>(_ user: UnsafeMutableRawPointer?, _ body: (HTTP2BlockCache) -> R) -> R {
        Unmanaged<HTTP2BlockCache>.fromOpaque(user!)._withUnsafeGuaranteedRef(body)
    }
}
