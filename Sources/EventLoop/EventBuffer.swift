import CLibevent
import Glibc

/// A non-owning view of a libevent `evbuffer` (a connection's input or output).
///
/// Bytes move between buffers without copying (``move(to:max:)``, ``moveAll(to:)``); only heads
/// and framing lines are made contiguous for parsing (``withContiguousPrefix(_:_:)``).
public struct EventBuffer {
    let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    /// Number of bytes buffered.
    public var count: Int { evbuffer_get_length(raw) }

    /// Whether nothing is buffered.
    public var isEmpty: Bool { count == 0 }

    /// Calls `body` with the first `min(maxLength, count)` bytes made contiguous.
    ///
    /// Making bytes contiguous may copy within libevent; callers bound `maxLength` (a head's limit,
    /// a chunk line) so bodies are never linearised.
    public func withContiguousPrefix<R, E: Error>(_ maxLength: Int, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let length = min(maxLength, count)
        if length == 0 { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let pointer = evbuffer_pullup(raw, length)
        return try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    /// Calls `body` with the buffer's bytes as the chunks libevent holds them, in order, neither
    /// copied nor drained (a body held whole to be hashed is read where it lies).
    public func withChunks<R>(_ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        let needed = evbuffer_peek(raw, -1, nil, nil, 0)
        guard needed > 0 else { return body([]) }
        var vectors = [iovec](repeating: iovec(), count: Int(needed))
        let filled = Int(evbuffer_peek(raw, -1, nil, &vectors, needed))
        return body(vectors.prefix(filled).map { UnsafeRawBufferPointer(start: $0.iov_base, count: $0.iov_len) })
    }

    /// Calls `body` with the first `length` bytes made contiguous, where the caller knows the
    /// buffer holds at least that many (``withContiguousPrefix(_:_:)`` without reading the
    /// length again: each read is a call into libevent).
    public func withContiguousFirst<R>(_ length: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if length == 0 { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let pointer = evbuffer_pullup(raw, length)
        precondition(pointer != nil, "fewer bytes buffered than the caller counted")
        return body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    /// Moves every byte to the end of `destination`, where the caller has just read how many
    /// there are (`count`).
    public func moveAll(to destination: EventBuffer, count: Int) {
        if count > 0 { evbuffer_add_buffer(destination.raw, raw) }
    }

    /// Discards the first `length` bytes.
    public func drain(_ length: Int) {
        evbuffer_drain(raw, length)
    }

    /// Moves up to `max` bytes from the front of this buffer to the end of `destination`
    /// without copying them; returns how many moved.
    @discardableResult
    public func move(to destination: EventBuffer, max: Int) -> Int {
        if max <= 0 { return 0 }
        if max >= count { return moveAll(to: destination) }
        return Int(evbuffer_remove_buffer(raw, destination.raw, max))
    }

    /// Moves every byte to the end of `destination`; returns how many moved.
    @discardableResult
    public func moveAll(to destination: EventBuffer) -> Int {
        let length = count
        moveAll(to: destination, count: length)
        return length
    }

    /// Appends bytes (copied into the buffer).
    public func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = evbuffer_add(raw, $0.baseAddress, $0.count) }
    }

    /// Appends raw bytes (copied into the buffer).
    public func append(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { evbuffer_add(raw, bytes.baseAddress, bytes.count) }
    }

    /// Appends what `body` writes in place into `maxCount` bytes reserved at the end of the
    /// buffer (one contiguous extent: no intermediate array, no second copy); `body` returns how
    /// many bytes it wrote, at most `maxCount`.
    public func write(reserving maxCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) {
        var extent = iovec()  // evbuffer_iovec is iovec here (EVENT__HAVE_SYS_UIO_H)
        guard maxCount > 0, evbuffer_reserve_space(raw, maxCount, &extent, 1) == 1 else {
            // Out of memory in libevent: write through an array instead.
            var bytes = [UInt8](repeating: 0, count: maxCount)
            let written = bytes.withUnsafeMutableBytes { body($0) }
            bytes.withUnsafeBytes { append(UnsafeRawBufferPointer(rebasing: $0[..<written])) }
            return
        }
        let written = body(UnsafeMutableRawBufferPointer(start: extent.iov_base, count: maxCount))
        precondition(written <= maxCount, "wrote beyond the reserved space")
        extent.iov_len = written
        evbuffer_commit_space(raw, &extent, 1)
    }

    /// Appends the UTF-8 bytes of `text`.
    public func append(_ text: String) {
        var text = text
        text.withUTF8 { _ = evbuffer_add(raw, $0.baseAddress, $0.count) }
    }

    /// Copies `count` bytes starting at `offset` without removing them or making the buffer
    /// contiguous.
    public func copyBytes(from offset: Int, count: Int) -> [UInt8] {
        guard count > 0, offset >= 0, offset + count <= self.count else { return [] }
        var position = evbuffer_ptr()
        guard evbuffer_ptr_set(raw, &position, offset, EVBUFFER_PTR_SET) == 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        let copied = out.withUnsafeMutableBytes { evbuffer_copyout_from(raw, &position, $0.baseAddress, count) }
        return copied == count ? out : []
    }

    /// Copies out up to `max` bytes from the front without removing them (for tests and diagnostics).
    public func peekBytes(max: Int) -> [UInt8] {
        withContiguousPrefix(max) { Array($0) }
    }
}
