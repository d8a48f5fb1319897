import CLibevent

/// Gives the heap's free pages back to the system. glibc keeps memory freed in the middle of
/// its heaps (and in every worker thread's arena) resident until it is reused: after a burst
/// of slow clients the process would stay at its peak. `malloc_trim` walks every arena and
/// releases the whole free pages it finds (`MADV_DONTNEED`); it costs a walk of the free lists,
/// so it is called after a lot was freed, not on a timer alone.
public enum HeapTrim {
    /// Releases free heap pages; true when some memory was given back.
    @discardableResult
    public static func release() -> Bool {
        shim_malloc_trim() == 1
    }

    /// Bytes in free chunks the heap keeps, in every arena (`mallinfo2().fordblks`). A trim
    /// does not lower it: the chunks stay free, only their pages go back.
    public static func freeBytes() -> Int {
        Int(shim_heap_free_bytes())
    }
}

/// When to call ``HeapTrim/release()``, looked at every few seconds: after a lot of client
/// output was given back (the buffer budget's count), or once the heap keeps ``freeGrowth``
/// more free bytes than it kept at its lowest since the last trim. The second rule catches
/// what no budget counts: a thousand idle or dripping clients' sessions and read buffers
/// (after a slow-POST burst RSS stayed at 31 MiB, three times idle).
public struct HeapTrimPolicy: Sendable, Equatable {
    /// Buffer bytes given back since the last look that make a trim worth it.
    public static let releasedThreshold = 4 << 20
    /// Free heap bytes, beyond the least seen since the last trim, that make a trim worth it.
    public static let freeGrowth = 8 << 20
    /// The least free heap seen since the last trim.
    private var floor = 0

    /// A policy that has not trimmed yet.
    public init() {}

    /// Whether to trim now, given the buffer bytes `released` since the last look and the heap's
    /// `free` bytes now. Once it says yes, the free bytes now are the new floor: memory that
    /// stays free (fragmented, or already trimmed) does not trim again and again.
    public mutating func shouldTrim(released: Int, free: Int) -> Bool {
        floor = min(floor, free)
        guard released >= HeapTrimPolicy.releasedThreshold || free >= floor + HeapTrimPolicy.freeGrowth else { return false }
        floor = free
        return true
    }
}
