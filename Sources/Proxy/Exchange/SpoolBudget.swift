import Synchronization

/// The disk space all response spools of the process may hold together (`spool.maxBytes`),
/// shared by every worker. Only the slow path touches it (a client fell behind), so one
/// atomic counter is cheap enough and keeps the limit exact across workers.
final class SpoolBudget: Sendable {
    /// Where spool files are created.
    let directory: String
    /// The most bytes all spools hold together; 0: spooling is off.
    let limit: Int
    /// The most one response holds: 1/``responseShares`` of ``limit``, but at least
    /// ``responseFloor`` (a small budget serves a few large responses rather than none).
    let responseLimit: Int
    private let used = Atomic<Int>(0)

    /// How many responses the budget is shared among at least. One client must not take the
    /// whole spool, and a spooled response makes its backend send all of it at once: 1000
    /// clients asking for 64 MiB each and reading nothing made a single-worker backend push
    /// 1 GiB into 16 spools within a second, stalling every other request for hundreds of ms.
    static let responseShares = 64
    /// The least ``responseLimit`` is (when ``limit`` allows): 16 MiB.
    static let responseFloor = 16 << 20

    init(directory: String, limit: Int) {
        self.directory = directory
        self.limit = limit
        self.responseLimit = min(limit, max(limit / SpoolBudget.responseShares, SpoolBudget.responseFloor))
    }

    /// Bytes held by spools now.
    var inUse: Int { used.load(ordering: .relaxed) }

    /// Whether a response may start spooling: some of the budget is left, and all of what is
    /// still to come of it when its length is known (`remaining`), within ``responseLimit``. A
    /// response that cannot be spooled whole is not spooled at all: part of it on disk would
    /// not free its connection.
    func hasRoom(for remaining: Int?) -> Bool {
        guard limit > 0 else { return false }
        let left = limit - inUse
        return left > 0 && (remaining ?? 0) <= min(left, responseLimit)
    }

    /// Takes up to `bytes` of the budget, as much as is left; returns how much it took.
    func reserve(upTo bytes: Int) -> Int {
        var current = used.load(ordering: .relaxed)
        while true {
            let taken = min(bytes, limit - current)
            guard taken > 0 else { return 0 }
            let (exchanged, original) = used.compareExchange(expected: current, desired: current + taken, ordering: .relaxed)
            if exchanged { return taken }
            current = original
        }
    }

    /// Gives back bytes taken by ``reserve(upTo:)``.
    func release(_ bytes: Int) {
        if bytes > 0 { used.subtract(bytes, ordering: .relaxed) }
    }
}
