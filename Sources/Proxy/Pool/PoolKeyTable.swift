/// The keys of an ``UpstreamPoolState`` in slots: a request finds its key by name (one hash),
/// a connection reaches its key by the slot it keeps (no hash on release). A slot is reused only
/// after its key was dropped, and a key is dropped only once it has no connection, so a
/// connection's slot is its key's for its whole life.
struct PoolKeyTable {
    private var slots: [UpstreamPoolState.Key?] = []
    private var names: [String] = []
    private var slotByName: [String: Int] = [:]
    private var freeSlots: [Int] = []
    /// Slots by the index a configured target's key was interned to when the configuration
    /// loaded (``UpstreamTarget/poolKeyIndex``), -1 where unknown: a request to a configured
    /// upstream finds its key without hashing the name. An entry is only a guess, confirmed by
    /// comparing the slot's name (the same String storage, so one pointer comparison): a
    /// reloaded configuration may number its keys differently, and a slot may be reused.
    private var slotByIndex: [Int] = []

    /// The slot of `name`'s key, if it has one.
    func slot(of name: String) -> Int? { slotByName[name] }

    /// The slot of `name`'s key, if it has one, found through `index` (the key's interned index,
    /// or -1) when that can be done without hashing; remembers the slot for `index`.
    mutating func slot(of name: String, index: Int) -> Int? {
        guard index >= 0 else { return slotByName[name] }
        if index < slotByIndex.count {
            let guess = slotByIndex[index]
            if guess >= 0, names[guess] == name { return guess }
        } else {
            slotByIndex.append(contentsOf: repeatElement(-1, count: index + 1 - slotByIndex.count))
        }
        guard let slot = slotByName[name] else { return nil }
        slotByIndex[index] = slot
        return slot
    }

    /// The slot of `name`'s key, made (empty) if it has none.
    mutating func slotMaking(_ name: String) -> Int {
        if let slot = slotByName[name] { return slot }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = UpstreamPoolState.Key()
            names[slot] = name
        } else {
            slot = slots.count
            slots.append(UpstreamPoolState.Key())
            names.append(name)
        }
        slotByName[name] = slot
        return slot
    }

    /// The key in `slot` (which must hold one), read and modified in place.
    subscript(slot slot: Int) -> UpstreamPoolState.Key {
        get { slots[slot]! }
        _modify { yield &slots[slot]! }
    }

    /// The name of the key in `slot`.
    func name(of slot: Int) -> String { names[slot] }

    /// `name`'s key, if it has one.
    subscript(name: String) -> UpstreamPoolState.Key? {
        slotByName[name].map { slots[$0]! }
    }

    /// Drops the key in `slot` if it has neither connections nor waiters.
    mutating func dropIfUnused(_ slot: Int) {
        guard let key = slots[slot], key.open == 0, key.waiters.isEmpty else { return }
        slots[slot] = nil
        slotByName[names[slot]] = nil
        names[slot] = ""
        freeSlots.append(slot)
    }

    /// The slots in use.
    var usedSlots: [Int] { Array(slotByName.values) }

    /// Every key by name (reports and tests; the request path never builds this).
    var byName: [String: UpstreamPoolState.Key] {
        slotByName.mapValues { slots[$0]! }
    }
}
