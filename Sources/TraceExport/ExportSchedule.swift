/// When the batching exporter sends, retries and gives up: a value-type machine with no I/O,
/// driven by the exporter on its loop (OTLP exporter specification, "Retry": 429, 502, 503
/// and 504 and connection failures are retried with exponential backoff, `Retry-After`
/// honoured; other answers drop the batch).
public struct ExportSchedule: Sendable, Equatable {
    /// How an export ended.
    public enum Outcome: Sendable, Equatable {
        /// 2xx: the spans were accepted.
        case accepted
        /// Worth retrying (429, 502, 503, 504, no connection, a timeout), after at least
        /// `retryAfter` when the receiver said so.
        case retryable(retryAfter: Duration?)
        /// Not worth retrying (another 4xx, a 5xx the spec does not retry).
        case rejected
    }

    /// What the exporter does next.
    public enum Action: Sendable, Equatable {
        /// Send a new batch taken from the queue.
        case exportNew
        /// Send the held batch again.
        case exportHeld
        /// Drop the held batch (counted as dropped).
        case dropHeld
        /// Release the held batch as sent (counted as exported).
        case releaseHeld
        /// Nothing to send now: wake up after this long.
        case wait(Duration)
    }

    /// How long spans wait in the queue at most before a batch is sent (`OTEL_BSP_SCHEDULE_DELAY`).
    public let scheduleDelay: Duration
    /// Sends of one batch before it is dropped.
    public let maxAttempts: Int
    /// The first retry's delay; doubled per attempt up to ``maxBackoff``.
    public let initialBackoff: Duration
    /// The longest backoff (a receiver that comes back is used again within this).
    public let maxBackoff: Duration
    /// The longest `Retry-After` honoured.
    public let maxRetryAfter: Duration

    /// Whether an export is in flight.
    public private(set) var exporting = false
    /// Whether a batch is held for a retry.
    public private(set) var holding = false
    /// Sends of the held (or in-flight) batch so far.
    public private(set) var attempts = 0
    /// Whether the exporter waits for a backoff to end (a full queue does not cut it short).
    public private(set) var backingOff = false

    /// A schedule.
    public init(scheduleDelay: Duration, maxAttempts: Int = 5, initialBackoff: Duration = .seconds(1),
                maxBackoff: Duration = .seconds(5), maxRetryAfter: Duration = .seconds(60)) {
        self.scheduleDelay = scheduleDelay
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wake-up timer fired; `queued` spans wait in the queue.
    public mutating func timerFired(queued: Int) -> Action {
        backingOff = false
        guard !exporting else { return .wait(scheduleDelay) }
        if holding { return start(held: true) }
        if queued > 0 { return start(held: false) }
        return .wait(scheduleDelay)
    }

    /// The queue reached a batch's size: send now unless busy or backing off.
    public mutating func batchReady() -> Action? {
        guard !exporting, !holding, !backingOff else { return nil }
        return start(held: false)
    }

    /// The export in flight ended; `queued` spans wait in the queue, `batchSize` make a batch.
    public mutating func exportFinished(_ outcome: Outcome, queued: Int, batchSize: Int) -> [Action] {
        exporting = false
        switch outcome {
        case .accepted:
            holding = false
            attempts = 0
            return [.releaseHeld, next(queued: queued, batchSize: batchSize)]
        case .rejected:
            holding = false
            attempts = 0
            return [.dropHeld, next(queued: queued, batchSize: batchSize)]
        case .retryable(let retryAfter):
            guard attempts < maxAttempts else {
                holding = false
                attempts = 0
                return [.dropHeld, next(queued: queued, batchSize: batchSize)]
            }
            holding = true
            backingOff = true
            var delay = initialBackoff
            for _ in 1..<attempts { delay = min(delay * 2, maxBackoff) }
            if let retryAfter { delay = max(delay, min(retryAfter, maxRetryAfter)) }
            return [.wait(delay)]
        }
    }

    private mutating func start(held: Bool) -> Action {
        exporting = true
        if held {
            attempts += 1
            return .exportHeld
        }
        holding = true
        attempts = 1
        return .exportNew
    }

    /// After a batch is done: at once while a whole batch is queued, else after the delay.
    private mutating func next(queued: Int, batchSize: Int) -> Action {
        if queued >= batchSize { return start(held: false) }
        return .wait(scheduleDelay)
    }
}
