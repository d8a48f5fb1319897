import CLibevent
import COpenSSL
import Glibc
import Synchronization

/// libevent's and OpenSSL's allocator: glibc's, with a bounded number of the blocks every
/// proxied request allocates and frees kept for the next request instead.
///
/// Per request over a TLS upstream, at c50 (`perf probe` on both libraries' allocators):
/// - two read chunks (libevent: 16 KiB for a ``SocketChannel/firstRead`` reservation, 128 KiB
///   for ``SocketChannel/maxRead``);
/// - two 1 KiB chains (a head written into an empty output);
/// - OpenSSL's buffers, 16,712 bytes to write and ``TLSLayer/readBufferLength`` (64 KiB) to read:
///   with `SSL_MODE_RELEASE_BUFFERS` an idle connection holds none, so each busy turn allocates
///   them again.
///
/// Too large for glibc's per-thread cache (or, for the chains, more of them alive at once than
/// it holds: a response's blocks live until the loop flushes, at the end of an iteration that
/// served dozens of connections), each cost about 300 instructions to allocate and free; taking
/// one from here costs a few dozen. The record-sized class serves libevent's 16 KiB chunks and
/// OpenSSL's write buffer alike (each is allocated as ``SizeClass/record``'s block).
///
/// What is kept is bounded per process: 512 × 1 KiB + 128 × 16.5 KiB + 8 × 64 KiB + 2 × 128 KiB
/// (3.3 MiB). An HTTP/2 app's 50 connections × 10 streams keep hundreds of chains and dozens of
/// read chunks alive at once: with 64 and 32 kept, three blocks per stream missed. A block is
/// recognized on free by its usable size, so blocks allocated before this was installed are
/// freed like any other. Not installed under AddressSanitizer (`ASAN_OPTIONS` set): a kept
/// block would hide a use after free of it.
enum ChunkCache {
    /// A size of block kept.
    enum SizeClass: CaseIterable {
        /// libevent's smallest chain.
        case chain
        /// A 16 KiB read chunk or one of OpenSSL's record buffers.
        case record
        /// OpenSSL's read buffer (``TLSLayer/readBufferLength``).
        case tlsRead
        /// A 128 KiB read chunk.
        case large

        /// The class serving an allocation of `size` bytes, if one does.
        @inline(__always)
        init?(request size: Int) {
            switch size {
            case ChunkCache.chainSize: self = .chain
            case ChunkCache.smallSize...ChunkCache.recordBlock: self = .record
            case ChunkCache.tlsReadSize: self = .tlsRead
            case ChunkCache.largeSize: self = .large
            default: return nil
            }
        }

        /// The class a block of `usable` bytes (`malloc_usable_size`) belongs to, if any: glibc
        /// rounds a request up by less than 64 bytes, or to whole pages when it maps it.
        @inline(__always)
        init?(usable: Int) {
            if usable >= ChunkCache.chainSize && usable < ChunkCache.chainSize + 64 {
                self = .chain
            } else if usable >= ChunkCache.recordBlock && usable < ChunkCache.recordBlock + 64 {
                self = .record
            } else if usable >= ChunkCache.tlsReadSize && usable < ChunkCache.tlsReadSize + 64 {
                self = .tlsRead
            } else if usable >= ChunkCache.largeSize && usable < ChunkCache.largeSize + 4096 {
                self = .large
            } else {
                return nil
            }
        }

        /// The bytes a block of this class is allocated with.
        var blockSize: Int {
            switch self {
            case .chain: ChunkCache.chainSize
            case .record: ChunkCache.recordBlock
            case .tlsRead: ChunkCache.tlsReadSize
            case .large: ChunkCache.largeSize
            }
        }

        /// Most blocks of this class kept.
        var capacity: Int {
            switch self {
            case .chain: 512
            case .record: 128
            case .tlsRead: 8
            case .large: 2
            }
        }
    }

    /// libevent's smallest chain (`MIN_BUFFER_SIZE`).
    static let chainSize = 1024
    /// libevent's allocation for a ``SocketChannel/firstRead`` reservation.
    static let smallSize = 16 * 1024
    /// What a record-class block is allocated as: a 16 KiB chunk, or OpenSSL's write buffer
    /// (a record and its overhead).
    static let recordBlock = 16 * 1024 + 512
    /// OpenSSL's read buffer: exactly ``TLSLayer/readBufferLength`` (larger than a record and
    /// its overhead, it is allocated at that length).
    static let tlsReadSize = TLSLayer.readBufferLength
    /// libevent's allocation for a ``SocketChannel/maxRead`` reservation.
    static let largeSize = 128 * 1024

    /// Hands libevent and OpenSSL the caching allocator (once, before either allocates: OpenSSL
    /// refuses it after its first allocation, and then keeps its own).
    static func install() {
        guard getenv("ASAN_OPTIONS") == nil else { return }
        event_set_mem_functions(chunkAllocate, chunkReallocate, chunkFree)
        _ = CRYPTO_set_mem_functions(cryptoAllocate, cryptoReallocate, cryptoFree)
    }

    /// The kept blocks.
    fileprivate static let slots = ChunkSlots()

    /// A block for `size` bytes: a kept one when the size has a class.
    @inline(__always)
    fileprivate static func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        guard let sizeClass = SizeClass(request: size) else { return malloc(size) }
        return slots.take(sizeClass) ?? malloc(sizeClass.blockSize)
    }

    /// Frees `pointer`, or keeps it when it is of a class with room.
    @inline(__always)
    fileprivate static func release(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        if !slots.keep(pointer) { free(pointer) }
    }
}

/// The blocks ``ChunkCache`` keeps: a bounded stack per size class.
final class ChunkSlots: Sendable {
    private let chains = BlockStack(capacity: ChunkCache.SizeClass.chain.capacity)
    private let records = BlockStack(capacity: ChunkCache.SizeClass.record.capacity)
    private let tlsReads = BlockStack(capacity: ChunkCache.SizeClass.tlsRead.capacity)
    private let large = BlockStack(capacity: ChunkCache.SizeClass.large.capacity)

    /// A kept block of `sizeClass`, if there is one.
    @inline(__always)
    func take(_ sizeClass: ChunkCache.SizeClass) -> UnsafeMutableRawPointer? {
        switch sizeClass {
        case .chain: chains.pop()
        case .record: records.pop()
        case .tlsRead: tlsReads.pop()
        case .large: large.pop()
        }
    }

    /// Keeps `block` when it is of a size class with room.
    @inline(__always)
    func keep(_ block: UnsafeMutableRawPointer) -> Bool {
        switch ChunkCache.SizeClass(usable: shim_malloc_usable_size(block)) {
        case .chain: chains.push(block)
        case .record: records.push(block)
        case .tlsRead: tlsReads.push(block)
        case .large: large.push(block)
        case nil: false
        }
    }
}

/// A bounded stack of block addresses behind a spin lock. libevent and OpenSSL allocate from
/// every loop's thread, but a push or pop holds the lock for a few instructions, so threads
/// seldom meet here; uncontended, the lock is one exchange and one store (`Mutex` cost about
/// 30 instructions more per allocation, four allocations per request). The addresses live
/// behind a pointer, out of reach of exclusivity checks.
final class BlockStack: @unchecked Sendable {
    private let locked = Atomic<Bool>(false)
    /// `capacity` addresses, then the count.
    private let storage: UnsafeMutablePointer<UInt>
    /// Most blocks kept.
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity + 1)
        storage.initialize(repeating: 0, count: capacity + 1)
    }

    deinit { storage.deallocate() }

    /// The block kept last, if any.
    @inline(__always)
    func pop() -> UnsafeMutableRawPointer? {
        lock()
        let count = storage[capacity]
        guard count > 0 else {
            unlock()
            return nil
        }
        storage[capacity] = count &- 1
        let block = storage[Int(count &- 1)]
        unlock()
        return UnsafeMutableRawPointer(bitPattern: block)
    }

    /// Keeps `block`; false when full.
    @inline(__always)
    func push(_ block: UnsafeMutableRawPointer) -> Bool {
        lock()
        let count = storage[capacity]
        guard count < UInt(capacity) else {
            unlock()
            return false
        }
        storage[Int(count)] = UInt(bitPattern: block)
        storage[capacity] = count &+ 1
        unlock()
        return true
    }

    @inline(__always)
    private func lock() {
        while locked.exchange(true, ordering: .acquiring) {
            // Held by another thread for a few instructions: let it finish.
            while locked.load(ordering: .relaxed) { sched_yield() }
        }
    }

    @inline(__always)
    private func unlock() {
        locked.store(false, ordering: .releasing)
    }
}

private func chunkAllocate(_ size: Int) -> UnsafeMutableRawPointer? {
    ChunkCache.allocate(size)
}

private func chunkReallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    realloc(pointer, size)
}

private func chunkFree(_ pointer: UnsafeMutableRawPointer?) {
    ChunkCache.release(pointer)
}

// OpenSSL's hooks. Its own allocator returns NULL for 0 bytes; so do these.

private func cryptoAllocate(_ size: Int, _ file: UnsafePointer<CChar>?, _ line: Int32) -> UnsafeMutableRawPointer? {
    size == 0 ? nil : ChunkCache.allocate(size)
}

private func cryptoReallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int, _ file: UnsafePointer<CChar>?,
                              _ line: Int32) -> UnsafeMutableRawPointer? {
    if pointer == nil { return size == 0 ? nil : ChunkCache.allocate(size) }
    return realloc(pointer, size)
}

private func cryptoFree(_ pointer: UnsafeMutableRawPointer?, _ file: UnsafePointer<CChar>?, _ line: Int32) {
    ChunkCache.release(pointer)
}
