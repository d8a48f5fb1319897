import CNghttp2

/// The name/value pairs of the head a codec hands to nghttp2 next (each pointing into bytes
/// the caller keeps alive through the `nghttp2_submit_*` call), in memory kept from head to
/// head.
///
/// An `Array` property did the same at ~40 instructions a pair: each append, through the
/// codec, checked the array's uniqueness and capacity out of line (a response of nine fields,
/// a gRPC request of ten). Here an append is a store and a count, and the memory grows by
/// doubling (a head is at most the codec's field limit and its pseudo-header fields).
/// Confined to its codec, as the codec to its loop's thread.
final class NameValueList {
    /// The pairs, `count` of them initialized, room for `capacity`.
    private var base: UnsafeMutablePointer<nghttp2_nv>
    /// How many pairs there are.
    private(set) var count = 0
    /// How many fit before the memory grows.
    private(set) var capacity: Int

    /// An empty list with room for `capacity` pairs (a usual head's fields and pseudo-header fields).
    init(capacity: Int = 16) {
        self.capacity = max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Empties it, keeping its memory.
    @inline(__always)
    func removeAll() {
        count = 0
    }

    /// Appends `pair`.
    @inline(__always)
    func append(_ pair: nghttp2_nv) {
        if count == capacity { grow() }
        (base + count).initialize(to: pair)
        count += 1
    }

    /// Calls `body` with the pairs (valid during the call).
    @inline(__always)
    func withPairs<R, E: Error>(_ body: (UnsafeBufferPointer<nghttp2_nv>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Twice the room, the pairs moved over. (Out of line: the common append stays small.)
    @inline(never)
    private func grow() {
        let bigger = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = bigger
        capacity *= 2
    }
}
