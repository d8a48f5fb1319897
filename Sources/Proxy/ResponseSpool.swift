import EventLoop

/// The part of one response that its client has not taken yet, in order: first what is in the
/// spool file, then what is staged in memory (relayed from the backend, not yet written,
/// because the budget had no room or it has just arrived).
///
/// Every byte in the file is reserved in the process's ``SpoolBudget``; the reservation is
/// given back when the file is emptied (the client caught up) and when the spool goes away
/// with its exchange, however that ends.
final class ResponseSpool {
    private let file: SpoolFile
    private let budget: SpoolBudget
    private let stagingBuffer = OwnedEventBuffer()
    /// Bytes of the budget this spool holds (what the file holds on disk).
    private var reserved = 0

    /// Opens a spool file in the budget's directory.
    init(budget: SpoolBudget) throws(SpoolError) {
        self.budget = budget
        file = try SpoolFile(directory: budget.directory)
    }

    deinit { budget.release(reserved) }

    /// Where the relay puts response bytes while the spool is in use.
    var staging: EventBuffer { stagingBuffer.buffer }

    /// Response bytes the client has not been given yet.
    var undelivered: Int { file.pending + staging.count }

    /// Writes as much of what is staged to the file as the budget has room for; returns
    /// whether nothing is left staged.
    func flush() throws(SpoolError) -> Bool {
        guard !staging.isEmpty else { return true }
        let room = budget.reserve(upTo: staging.count)
        guard room > 0 else { return false }
        reserved += room
        let before = file.size
        defer {
            // Whatever a failed write did not use goes back to the budget at once.
            let unused = room - (file.size - before)
            reserved -= unused
            budget.release(unused)
        }
        try file.append(from: staging, max: room)
        return staging.isEmpty
    }

    /// Moves up to `max` undelivered bytes, oldest first, to `output`.
    func deliver(to output: EventBuffer, max: Int) throws(SpoolError) {
        var room = max
        if file.pending > 0 {
            room -= try file.read(into: output, max: room)
        }
        // What the client has taken no longer needs disk space or budget.
        let freed = file.releaseRead()
        reserved -= freed
        budget.release(freed)
        if file.pending == 0 && room > 0 {
            staging.move(to: output, max: room)
        }
    }
}
