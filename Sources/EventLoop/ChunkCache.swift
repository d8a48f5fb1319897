import CLibevent
import Glibc
import Synchronization

/// libevent's allocator: glibc's, with a few of the buffer chunks that sockets read into kept
/// for the next read instead of being freed and allocated again.
///
/// Every read reserves a chunk (``SocketChannel/firstRead`` or ``SocketChannel/maxRead`` bytes,
/// which libevent allocates as 16 KiB or 128 KiB) and the chunk is freed as soon as the bytes
/// were taken: twice per proxied request. Too large for glibc's per-thread cache, each cost
/// about 200 instructions to allocate and free; taking one from a slot here costs a few.
///
/// The slots are process-wide atomics (libevent calls its allocator from every loop's thread)
/// and few, so what is kept is bounded: at most 4 × 16 KiB + 2 × 128 KiB. A chunk is recognized
/// on free by its usable size, so blocks libevent allocated before this was installed are
/// freed like any other. Not installed under AddressSanitizer (`ASAN_OPTIONS` set): a kept
/// chunk would hide a use after free of it.
enum ChunkCache {
    /// libevent's allocation for a ``SocketChannel/firstRead`` reservation.
    static let smallSize = 16 * 1024
    /// libevent's allocation for a ``SocketChannel/maxRead`` reservation.
    static let largeSize = 128 * 1024

    /// Hands libevent the caching allocator (once, before the first loop).
    static func install() {
        guard getenv("ASAN_OPTIONS") == nil else { return }
        event_set_mem_functions(chunkAllocate, chunkReallocate, chunkFree)
    }

    /// The kept chunks (addresses; 0 for an empty slot).
    fileprivate static let slots = ChunkSlots()
}

/// The slots of ``ChunkCache``: chunk addresses, 0 for an empty slot.
final class ChunkSlots: Sendable {
    private let small0 = Atomic<UInt>(0), small1 = Atomic<UInt>(0), small2 = Atomic<UInt>(0), small3 = Atomic<UInt>(0)
    private let large0 = Atomic<UInt>(0), large1 = Atomic<UInt>(0)

    /// A kept chunk for an allocation of `size` bytes (one of the two sizes), if there is one.
    @inline(__always)
    func take(_ size: Int) -> UnsafeMutableRawPointer? {
        if size == ChunkCache.smallSize {
            return Self.take(small0) ?? Self.take(small1) ?? Self.take(small2) ?? Self.take(small3)
        }
        if size == ChunkCache.largeSize { return Self.take(large0) ?? Self.take(large1) }
        return nil
    }

    /// Keeps `chunk` when it is of one of the two sizes and a slot is free.
    @inline(__always)
    func keep(_ chunk: UnsafeMutableRawPointer) -> Bool {
        let usable = shim_malloc_usable_size(chunk)
        let address = UInt(bitPattern: chunk)
        // glibc rounds a request up by less than 64 bytes, or to whole pages when it maps it.
        if usable >= ChunkCache.smallSize && usable < ChunkCache.smallSize + 64 {
            return Self.keep(address, in: small0) || Self.keep(address, in: small1)
                || Self.keep(address, in: small2) || Self.keep(address, in: small3)
        }
        if usable >= ChunkCache.largeSize && usable < ChunkCache.largeSize + 4096 {
            return Self.keep(address, in: large0) || Self.keep(address, in: large1)
        }
        return false
    }

    @inline(__always)
    private static func take(_ slot: borrowing Atomic<UInt>) -> UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: slot.exchange(0, ordering: .acquiring))
    }

    @inline(__always)
    private static func keep(_ address: UInt, in slot: borrowing Atomic<UInt>) -> Bool {
        slot.compareExchange(expected: 0, desired: address, ordering: .releasing).exchanged
    }
}

private func chunkAllocate(_ size: Int) -> UnsafeMutableRawPointer? {
    ChunkCache.slots.take(size) ?? malloc(size)
}

private func chunkReallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    realloc(pointer, size)
}

private func chunkFree(_ pointer: UnsafeMutableRawPointer?) {
    guard let pointer else { return }
    if !ChunkCache.slots.keep(pointer) { free(pointer) }
}
