import EventLoop

/// The tokens one route fetches per request rather than once: one ``ManagedCredential`` per
/// ``TokenVariantKey`` (a scope set, an audience, a caller's subject), created on first use,
/// at most ``capacity`` of them — the least recently used is dropped — and dropped as well once
/// unused for ``idleTimeout``, so no token is refreshed or kept for nobody.
///
/// ``credential(for:subject:)`` is called by every worker on every request of the route: a
/// mutex, a hash lookup and a clock read. Everything else (the sweep, stopping dropped
/// variants) runs on the token loop. Each variant is an ordinary managed credential, so
/// single flight, backoff, `tokenWait` and the 401 handling are those of every token.
public final class TokenVariants: @unchecked Sendable {
    // @unchecked: `table` is behind a mutex; `sweep` and `stopped` are touched only on `loop`.
    /// Makes the credential for a key; `subject` is the caller's token to exchange, if any
    /// (the variant keeps it to make its request: it is never logged nor stored elsewhere).
    public typealias Maker = @Sendable (_ key: TokenVariantKey, _ subject: String?, _ gate: TokenVariantGate) -> ManagedCredential

    /// The credential's name.
    public let name: String
    /// The most variants held.
    public let capacity: Int
    /// A variant unused this long is dropped.
    public let idleTimeout: Duration
    /// How long a dropped variant still answers the requests waiting on it.
    public let grace: Duration
    /// Held closed by the variants' failures that are not about one caller.
    public let gate = TokenVariantGate()
    private let loop: EventLoop
    private let clock: any TokenClock
    private let make: Maker
    private let table = Locked(Table())
    private var sweep: Timer?
    private var stopped = false

    private struct Entry {
        let credential: ManagedCredential
        var lastUsed: ContinuousClock.Instant
    }

    private struct Table {
        var entries: [TokenVariantKey: Entry] = [:]
        var dropped = 0
    }

    /// Creates an empty set of variants whose fetches run on `loop`.
    public init(name: String, capacity: Int, idleTimeout: Duration = .seconds(900), grace: Duration = .seconds(30),
                loop: EventLoop, clock: any TokenClock = SystemTokenClock(), make: @escaping Maker) {
        self.name = name
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
        self.grace = grace
        self.loop = loop
        self.clock = clock
        self.make = make
    }

    /// The credential for `key`, made (not yet fetching: the first request's wait starts it)
    /// when there is none. Any thread.
    public func credential(for key: TokenVariantKey, subject: String?) -> ManagedCredential {
        let now = clock.now
        let (credential, evicted) = table.withLock { table -> (ManagedCredential, ManagedCredential?) in
            if let found = table.entries[key] {
                table.entries[key]!.lastUsed = now
                return (found.credential, nil)
            }
            let made = make(key, subject, gate)
            var evicted: ManagedCredential?
            if table.entries.count >= capacity, let oldest = table.entries.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                table.entries[oldest.key] = nil
                table.dropped += 1
                evicted = oldest.value.credential
            }
            table.entries[key] = Entry(credential: made, lastUsed: now)
            return (made, evicted)
        }
        if let evicted { retire([evicted]) }
        return credential
    }

    /// The credential for `key` if one is held (marked as used), without making one. Any thread.
    public func existing(for key: TokenVariantKey) -> ManagedCredential? {
        let now = clock.now
        return table.withLock { table in
            guard let found = table.entries[key] else { return nil }
            table.entries[key]!.lastUsed = now
            return found.credential
        }
    }

    /// The variants held now, most recently used first. Any thread.
    public var credentials: [ManagedCredential] {
        table.withLock { $0.entries.values.sorted { $0.lastUsed > $1.lastUsed }.map(\.credential) }
    }

    /// How many variants are held now.
    public var count: Int { table.withLock { $0.entries.count } }

    /// How many variants were dropped (least recently used, or idle) since start.
    public var droppedCount: Int { table.withLock { $0.dropped } }

    /// Starts dropping idle variants (any thread).
    public func start() {
        loop.execute { [self] in
            guard !stopped, sweep == nil else { return }
            let every = max(.seconds(1), idleTimeout / 4)
            sweep = Timer(on: loop, after: every, repeating: every) { [weak self] in self?.dropIdle() }
        }
    }

    /// Stops every variant and the sweep (any thread).
    public func stop() {
        let all = table.withLock { table -> [ManagedCredential] in
            let all = table.entries.values.map(\.credential)
            table.entries.removeAll()
            return all
        }
        for credential in all { credential.stop() }
        loop.execute { [self] in
            stopped = true
            sweep?.cancel()
            sweep = nil
        }
    }

    /// Drops the variants unused for ``idleTimeout`` (the sweep's work; any thread).
    public func dropIdle() {
        let cutoff = clock.now - idleTimeout
        let idle = table.withLock { table -> [ManagedCredential] in
            let keys = table.entries.filter { $0.value.lastUsed < cutoff }.map(\.key)
            table.dropped += keys.count
            return keys.compactMap { table.entries.removeValue(forKey: $0)?.credential }
        }
        if !idle.isEmpty { retire(idle) }
    }

    /// Stops dropped variants after ``grace``: a request that found one just before still
    /// gets its token.
    private func retire(_ credentials: [ManagedCredential]) {
        let grace = self.grace
        loop.execute { [loop] in
            let holder = RetireTimer()
            holder.timer = Timer(on: loop, after: grace) {
                for credential in credentials { credential.stop() }
                holder.timer = nil
            }
        }
    }
}

/// Keeps a one-shot timer alive until it fires (token loop only).
private final class RetireTimer {
    var timer: Timer?
}
