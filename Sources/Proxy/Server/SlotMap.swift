/// Values in reusable slots, each reached by an `Int` ID that one map never reuses: the slot in
/// the low 32 bits, the slot's generation (bumped each time the slot is freed) above them. A
/// lookup is an array index and a compare — no hashing — which is why the upstream pool keeps
/// its connections and queued requests here (several lookups per proxied request). A new map
/// starts again at 0: whoever keeps IDs across maps checks what it finds under one.
///
/// The first value inserted gets ID 0, the next 1, and so on while no slot has been freed.
struct SlotMap<Value>: Sequence {
    /// A stored value and its ID's generation; `nil` value when the slot is free. (A struct,
    /// not a tuple: a tuple of a generic value is copied and destroyed through the runtime's
    /// generic tuple witnesses.)
    private struct Slot {
        var generation: Int
        var value: Value?
    }

    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    /// Values stored.
    private(set) var count = 0

    /// An empty map.
    init() {}

    private static func slot(of id: Int) -> Int { id & 0xFFFF_FFFF }
    private static func generation(of id: Int) -> Int { id >> 32 }

    /// The ID the next ``insert(_:)`` returns.
    var nextID: Int {
        guard let slot = freeSlots.last else { return slots.count }
        return slots[slot].generation << 32 | slot
    }

    /// Stores `value` in a free slot (or a new one) and returns its ID.
    @discardableResult
    mutating func insert(_ value: Value) -> Int {
        count += 1
        if let slot = freeSlots.popLast() {
            slots[slot].value = value
            return slots[slot].generation << 32 | slot
        }
        slots.append(Slot(generation: 0, value: value))
        return slots.count - 1
    }

    /// The value with `id`, if it is still stored. IDs are only made by ``insert(_:)``.
    subscript(id: Int) -> Value? {
        let slot = Self.slot(of: id)
        guard slot < slots.count, slots[slot].generation == Self.generation(of: id) else { return nil }
        return slots[slot].value
    }

    /// Calls `body` with the value stored for `id` (there must be one), changed in place.
    /// A closure rather than a `_modify` accessor: the accessor's coroutine frame was allocated
    /// on each call where it was not inlined (twice per proxied request).
    @inline(__always)
    mutating func modify<Result>(_ id: Int, _ body: (inout Value) -> Result) -> Result {
        let slot = Self.slot(of: id)
        precondition(slot < slots.count && slots[slot].generation == Self.generation(of: id) && slots[slot].value != nil,
                     "SlotMap: no value with ID \(id)")
        return body(&slots[slot].value!)
    }

    /// Removes and returns the value with `id`, if it is still stored.
    @discardableResult
    mutating func removeValue(forID id: Int) -> Value? {
        let slot = Self.slot(of: id)
        guard slot < slots.count, slots[slot].generation == Self.generation(of: id), slots[slot].value != nil else { return nil }
        // Moved out, not copied and then destroyed in place.
        var value: Value?
        swap(&value, &slots[slot].value)
        free(slot)
        return value
    }

    private mutating func free(_ slot: Int) {
        slots[slot].generation += 1
        freeSlots.append(slot)
        count -= 1
    }

    /// Whether no value is stored.
    var isEmpty: Bool { count == 0 }

    /// The IDs of the stored values, in slot order.
    var keys: [Int] { map(\.key) }

    /// The stored values, in slot order.
    var values: [Value] { map(\.value) }

    /// The stored values with their IDs, in slot order.
    func makeIterator() -> AnyIterator<(key: Int, value: Value)> {
        var slot = 0
        return AnyIterator { [slots] in
            while slot < slots.count {
                defer { slot += 1 }
                if let value = slots[slot].value { return (slots[slot].generation << 32 | slot, value) }
            }
            return nil
        }
    }
}
