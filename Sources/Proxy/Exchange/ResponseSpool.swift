import EventLoop

/// The part of one response that its client has not taken yet, in order: first what is in the
/// spool file, then what is staged in memory (relayed from the backend, not yet written,
/// because the budget had no room or it has just arrived).
///
/// Every byte in the file is reserved in the process's ``SpoolBudget``, for a response of
/// known length all of it when spooling starts; the reservation is given back as the client
/// reads, and whatever is left when the spool goes away with its exchange, however that ends.
final class ResponseSpool {
    private let file: SpoolFile
    private let budget: SpoolBudget
    private let stagingBuffer = OwnedEventBuffer()
    /// Budget taken ahead for bytes not written yet (the known rest of a response).
    private var prepaid = 0

    /// Opens a spool file in the budget's directory, taking `expected` bytes of the budget at
    /// once (the rest of a response whose length is known), or nil when the budget no longer
    /// has that much.
    init?(budget: SpoolBudget, expected: Int) throws(SpoolError) {
        if expected > 0 {
            let taken = budget.reserve(upTo: expected)
            guard taken == expected else {
                budget.release(taken)
                return nil
            }
        }
        self.budget = budget
        prepaid = expected
        do {
            file = try SpoolFile(directory: budget.directory)
        } catch {
            budget.release(expected)
            throw error
        }
    }

    // What is on disk and what was taken ahead both go back to the budget.
    deinit { budget.release(file.held + prepaid) }

    /// Where the relay puts response bytes while the spool is in use.
    var staging: EventBuffer { stagingBuffer.buffer }

    /// Response bytes the client has not been given yet.
    var undelivered: Int { file.pending + staging.count }

    /// Writes as much of what is staged to the file as the budget allows (what was taken
    /// ahead first); returns whether nothing is left staged.
    func flush() throws(SpoolError) -> Bool {
        guard !staging.isEmpty else { return true }
        if prepaid < staging.count {
            // A response of unknown length holds at most its share at a time, like one of known length.
            let share = budget.responseLimit - file.held - prepaid
            if share > 0 { prepaid += budget.reserve(upTo: min(staging.count - prepaid, share)) }
        }
        guard prepaid > 0 else { return false }
        let before = file.size
        defer { prepaid -= file.size - before }
        try file.append(from: staging, max: prepaid)
        return staging.isEmpty
    }

    /// Moves up to `max` undelivered bytes, oldest first, to `output`.
    func deliver(to output: EventBuffer, max: Int) throws(SpoolError) {
        var room = max
        if file.pending > 0 {
            room -= try file.read(into: output, max: room)
        }
        // What the client has taken no longer needs disk space or budget.
        budget.release(file.releaseRead())
        if file.pending == 0 && room > 0 {
            staging.move(to: output, max: room)
        }
    }
}
