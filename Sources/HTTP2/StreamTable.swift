/// Values by HTTP/2 stream id: what a connection looks up for every frame and every move of a
/// response (its open streams, their outbound bodies).
///
/// A `Dictionary` hashes each `Int32` with SipHash (about 80 instructions; 14 lookups per
/// stream cost 1.7k instructions at 50 connections × 10 streams). Stream ids need no such
/// care: a peer picks them, but only increasing and odd (RFC 9113 §5.1.1), and a connection
/// holds at most its concurrent-stream limit. So: open addressing with linear probing over a
/// power-of-two table, Fibonacci hashing (one multiply; consecutive ids land far apart), at
/// most three quarters full, removal by shifting the run back (no tombstones).
///
/// A value type (copy-on-write arrays): a copy iterates what the table held when copied.
public struct StreamTable<Value>: Sequence {
    /// The stream id in each slot; 0 (the connection's id, never a stream's) when empty.
    private var keys: [Int32] = []
    private var values: [Value?] = []
    /// How many ids the table holds.
    public private(set) var count = 0
    /// 32 minus the table's size in bits: the hash is the top bits of the product.
    private var shift: UInt32 = 32

    /// An empty table (it allocates at its first insertion).
    public init() {}

    /// Whether the table holds nothing.
    public var isEmpty: Bool { count == 0 }

    /// The value for stream `id`; setting `nil` removes it. `id` must be positive.
    public subscript(id: Int32) -> Value? {
        get {
            guard let slot = find(id) else { return nil }
            return values[slot]
        }
        set {
            if let newValue {
                insert(id, newValue)
            } else {
                _ = removeValue(forKey: id)
            }
        }
    }

    /// Removes stream `id`'s value and returns it (nil when there was none).
    @discardableResult
    public mutating func removeValue(forKey id: Int32) -> Value? {
        guard let slot = find(id) else { return nil }
        return remove(at: slot)
    }

    /// Removes everything (keeping the table's size).
    public mutating func removeAll() {
        guard count > 0 else { return }
        for slot in keys.indices where keys[slot] != 0 {
            keys[slot] = 0
            values[slot] = nil
        }
        count = 0
    }

    /// Whether the table holds an id for which `predicate` holds.
    public func containsKey(where predicate: (Int32) -> Bool) -> Bool {
        keys.contains { $0 != 0 && predicate($0) }
    }

    /// The values, in no particular order.
    public var allValues: [Value] { map(\.value) }

    // MARK: - Sequence

    /// Iterates the ids and their values, in no particular order.
    public struct Iterator: IteratorProtocol {
        fileprivate let table: StreamTable
        fileprivate var slot = 0

        public mutating func next() -> (key: Int32, value: Value)? {
            while slot < table.keys.count {
                defer { slot += 1 }
                let key = table.keys[slot]
                if key != 0, let value = table.values[slot] { return (key, value) }
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(table: self) }

    public var underestimatedCount: Int { count }

    // MARK: - the table

    @inline(__always)
    private func home(_ id: Int32) -> Int {
        Int((UInt32(bitPattern: id) &* 0x9E37_79B1) &>> shift)
    }

    private func find(_ id: Int32) -> Int? {
        // (0 marks an empty slot: it is never a stream's id.)
        guard count > 0, id > 0 else { return nil }
        let mask = keys.count &- 1
        var slot = home(id)
        while true {
            let key = keys[slot]
            if key == id { return slot }
            if key == 0 { return nil }
            slot = (slot &+ 1) & mask
        }
    }

    private mutating func insert(_ id: Int32, _ value: Value) {
        precondition(id > 0, "a stream id is positive")
        if (count + 1) * 4 > keys.count * 3 { grow() }
        let mask = keys.count &- 1
        var slot = home(id)
        while true {
            let key = keys[slot]
            if key == id {
                values[slot] = value
                return
            }
            if key == 0 {
                keys[slot] = id
                values[slot] = value
                count += 1
                return
            }
            slot = (slot &+ 1) & mask
        }
    }

    /// Empties `slot`, moving back the entries after it that would otherwise no longer be
    /// found (those whose home is not cyclically within the gap and their slot).
    /// Returns the value moved out of `slot`. (Values move by swaps, not copies: a copy of a
    /// class reference is a retain, and the slot it leaves a release.)
    private mutating func remove(at slot: Int) -> Value? {
        var removed: Value? = nil
        swap(&removed, &values[slot])
        let mask = keys.count &- 1
        var gap = slot
        var next = slot
        while true {
            next = (next &+ 1) & mask
            let key = keys[next]
            if key == 0 { break }
            let home = home(key)
            let stays = gap <= next ? (gap < home && home <= next) : (gap < home || home <= next)
            if stays { continue }
            keys[gap] = key
            // (The gap's value is nil: moved out above, or by the swap before.)
            values.swapAt(gap, next)
            gap = next
        }
        keys[gap] = 0
        count -= 1
        return removed
    }

    private mutating func grow() {
        let old = zip(keys, values)
        let size = Swift.max(8, keys.count * 2)
        keys = [Int32](repeating: 0, count: size)
        values = [Value?](repeating: nil, count: size)
        shift = 32 - UInt32(size.trailingZeroBitCount)
        count = 0
        for (key, value) in old where key != 0 {
            if let value { insert(key, value) }
        }
    }
}

extension StreamTable where Value: AnyObject {
    /// The object for `id`, if there is one, not retained (a copy through the subscript is a
    /// retain and a release, two atomic operations per look, and a codec looks up a stream's
    /// body several times per response). The table keeps it alive: use it only until the table
    /// changes. (Returned, not lent to a closure: a table stored in a class and lent for a call
    /// is retained around it, both its arrays, which costs what the object's retain would.)
    @inline(never)
    func unretainedValue(for id: Int32) -> Unmanaged<Value>? {
        guard let slot = find(id), let value = values[slot] else { return nil }
        return Unmanaged.passUnretained(value)
    }
}
