/// Values kept under IDs that a ``SlotMap`` made (the upstream pool's connection objects under
/// its state machine's connection IDs): an array index and a generation compare per lookup, and
/// storage bounded by the ``SlotMap``'s slot count, since the IDs' slots are its slots.
struct SlotMirror<Value> {
    private var slots: [(generation: Int, value: Value?)] = []

    /// An empty mirror.
    init() {}

    /// The value stored under `id`, if any; setting stores or removes it (a value stored under
    /// an older ID of the same slot is replaced).
    subscript(id: Int) -> Value? {
        @inline(__always) get {
            let slot = id & 0xFFFF_FFFF
            guard slot < slots.count, slots[slot].generation == id >> 32 else { return nil }
            return slots[slot].value
        }
        @inline(__always) set {
            let slot = id & 0xFFFF_FFFF
            if slot >= slots.count {
                guard newValue != nil else { return }
                slots.append(contentsOf: repeatElement((generation: 0, value: nil as Value?), count: slot + 1 - slots.count))
            } else if slots[slot].generation != id >> 32 && newValue == nil {
                return  // removing under a stale ID leaves the newer value alone
            }
            slots[slot] = (id >> 32, newValue)
        }
    }

    /// Removes and returns the value stored under `id`, if any.
    mutating func removeValue(forID id: Int) -> Value? {
        guard let value = self[id] else { return nil }
        self[id] = nil
        return value
    }

}
