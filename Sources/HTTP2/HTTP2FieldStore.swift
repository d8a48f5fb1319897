import Glibc

/// The regular fields of an ``HTTP2Head``: their names and values back to back, and where each
/// name and value ends (two entries a field), in one block of memory.
///
/// A head kept them as two arrays: two buffers to copy-check and grow, and an `Array.append`
/// for each name, value and end (~70 instructions each: about 3k of a gRPC call's ~14
/// fields). Here a field is two copies of bytes and two stores once the head made room.
/// Copy-on-write: a head changes a store only while it holds the only reference
/// (`isKnownUniquelyReferenced`), and copies it otherwise.
final class HTTP2FieldStore: @unchecked Sendable {
    // @unchecked: a store is changed only through the one head that references it (see above);
    // shared stores are only read.

    /// The block: `endCapacity` ends, then `byteCapacity` bytes (nil while both are 0).
    private var block: UnsafeMutableRawPointer?
    /// How many bytes of names and values there are.
    private(set) var byteCount = 0
    /// How many bytes fit.
    private(set) var byteCapacity = 0
    /// How many ends there are (twice the fields).
    private(set) var endCount = 0
    /// How many ends fit.
    private(set) var endCapacity = 0

    /// An empty store, holding no memory.
    init() {}

    /// An empty store with room for `bytes` bytes and `ends` ends.
    init(bytes: Int, ends: Int) {
        allocate(bytes: bytes, ends: ends)
    }

    deinit { block?.deallocate() }

    /// The shared empty store of new heads (never changed: no head holds the only reference).
    static let empty = HTTP2FieldStore()

    /// The ends, where the block starts.
    private var endBase: UnsafeMutablePointer<Int> {
        // (Never read while the block is nil: every count is 0 then.)
        (block ?? UnsafeMutableRawPointer(bitPattern: MemoryLayout<Int>.alignment)!).assumingMemoryBound(to: Int.self)
    }

    /// The bytes, after the ends.
    private var byteBase: UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(endBase + endCapacity)
    }

    /// The names and values, valid while the store is alive and unchanged.
    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: byteBase.assumingMemoryBound(to: UInt8.self), count: byteCount) }

    /// The ends, valid while the store is alive and unchanged.
    var ends: UnsafeBufferPointer<Int> { UnsafeBufferPointer(start: endBase, count: endCount) }

    /// Whether `bytes` more bytes and `ends` more ends fit.
    func fits(bytes: Int, ends: Int) -> Bool {
        byteCount + bytes <= byteCapacity && endCount + ends <= endCapacity
    }

    /// Makes room for `bytes` more bytes and `ends` more ends, at least doubling what grows (a
    /// head decoded field by field grows amortized).
    func grow(bytes: Int, ends: Int) {
        let newBytes = byteCount + bytes <= byteCapacity ? byteCapacity : max(byteCount + bytes, byteCapacity * 2, 256)
        let newEnds = endCount + ends <= endCapacity ? endCapacity : max(endCount + ends, endCapacity * 2, 16)
        let old = block, oldEnds = endBase, oldBytes = byteBase
        allocate(bytes: newBytes, ends: newEnds)
        if let old {
            endBase.update(from: oldEnds, count: endCount)
            byteBase.copyMemory(from: oldBytes, byteCount: byteCount)
            old.deallocate()
        }
    }

    /// A copy with room for `bytes` more bytes and `ends` more ends.
    func copy(adding bytes: Int, ends: Int) -> HTTP2FieldStore {
        let copy = HTTP2FieldStore(bytes: max(byteCount + bytes, 256), ends: max(endCount + ends, 16))
        copy.endBase.update(from: endBase, count: endCount)
        copy.byteBase.copyMemory(from: byteBase, byteCount: byteCount)
        copy.byteCount = byteCount
        copy.endCount = endCount
        return copy
    }

    /// Whether `other` holds the same fields: the same ends and the same bytes.
    func holdsSameFields(as other: HTTP2FieldStore) -> Bool {
        guard byteCount == other.byteCount, endCount == other.endCount, ends.elementsEqual(other.ends) else { return false }
        return byteCount == 0 || memcmp(byteBase, other.byteBase, byteCount) == 0
    }

    /// Appends a field (room made beforehand: ``fits(bytes:ends:)``).
    ///
    /// The counts and the block are read once and the counts stored once: read through `self`
    /// around the two copies (calls the optimizer cannot see into), each was loaded again after
    /// them (~40 instructions of a field, a dozen fields a gRPC call).
    func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let start = byteCount, endIndex = endCount
        let nameEnd = start + name.count, valueEnd = nameEnd + value.count
        precondition(valueEnd <= byteCapacity && endIndex + 2 <= endCapacity, "an HTTP/2 head's fields outgrew their room")
        // (Room for two ends: the block exists.)
        let ends = block.unsafelyUnwrapped.assumingMemoryBound(to: Int.self)
        let bytes = UnsafeMutableRawPointer(ends + endCapacity)
        if let from = name.baseAddress, !name.isEmpty { (bytes + start).copyMemory(from: from, byteCount: name.count) }
        if let from = value.baseAddress, !value.isEmpty { (bytes + nameEnd).copyMemory(from: from, byteCount: value.count) }
        ends[endIndex] = nameEnd
        ends[endIndex + 1] = valueEnd
        byteCount = valueEnd
        endCount = endIndex + 2
    }

    /// Calls `write` with the free room (bytes, ends) to fill from the start of each, then
    /// takes `written` (bytes, ends) of it as the store's (an empty store, sized for it).
    func fill(_ write: (UnsafeMutableRawBufferPointer, UnsafeMutableBufferPointer<Int>) -> (bytes: Int, ends: Int)) {
        precondition(byteCount == 0 && endCount == 0, "an HTTP/2 head is filled once, from empty")
        let written = write(UnsafeMutableRawBufferPointer(start: byteBase, count: byteCapacity),
                            UnsafeMutableBufferPointer(start: endBase, count: endCapacity))
        precondition(written.bytes <= byteCapacity && written.ends <= endCapacity, "an HTTP/2 head outgrew the size it was made with")
        byteCount = written.bytes
        endCount = written.ends
    }

    /// Empties it, keeping its memory.
    func removeAll() {
        byteCount = 0
        endCount = 0
    }

    /// Replaces the block with one of `bytes` and `ends` capacity (its contents copied by the caller).
    private func allocate(bytes: Int, ends: Int) {
        endCapacity = ends
        byteCapacity = bytes
        let size = ends * MemoryLayout<Int>.stride + bytes
        block = size == 0 ? nil : UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<Int>.alignment)
        if let block {
            block.bindMemory(to: Int.self, capacity: ends)
            (block + ends * MemoryLayout<Int>.stride).bindMemory(to: UInt8.self, capacity: bytes)
        }
    }
}
