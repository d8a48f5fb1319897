/// The exchanges of one worker that hold a backend connection while their client has stopped
/// reading (the response is paused: no spool could take the rest), by pool key, with when each
/// stalled.
///
/// When a request must queue at an upstream's connection limit, the holder that stalled first
/// gives its connection up (its response is cut short), so clients that read are never starved
/// by clients that do not. Only the slow path touches it: marks happen when a response pauses,
/// lookups when a request queues.
struct StalledHolders<Holder: AnyObject> {
    private struct Entry {
        let holder: Holder
        let since: ContinuousClock.Instant
    }

    private var byKey: [String: [ObjectIdentifier: Entry]] = [:]

    /// Holders waiting on their clients, across all keys.
    var count: Int { byKey.values.reduce(0) { $0 + $1.count } }

    /// `holder`'s response to `key` paused on its client at `now` (a holder already marked
    /// keeps its first time).
    mutating func mark(_ holder: Holder, key: String, now: ContinuousClock.Instant) {
        let id = ObjectIdentifier(holder)
        if byKey[key]?[id] != nil { return }
        byKey[key, default: [:]][id] = Entry(holder: holder, since: now)
    }

    /// `holder` no longer waits on its client while holding a connection to `key` (its client
    /// read again, or the exchange ended).
    mutating func unmark(_ holder: Holder, key: String) {
        byKey[key]?[ObjectIdentifier(holder)] = nil
        if byKey[key]?.isEmpty == true { byKey[key] = nil }
    }

    /// Removes and returns the holder of a connection to `key` that stalled first, if any.
    mutating func takeOldest(key: String) -> Holder? {
        guard let entries = byKey[key], let oldest = entries.min(by: { $0.value.since < $1.value.since }) else { return nil }
        unmark(oldest.value.holder, key: key)
        return oldest.value.holder
    }
}
