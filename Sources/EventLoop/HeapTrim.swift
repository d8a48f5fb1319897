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
}
