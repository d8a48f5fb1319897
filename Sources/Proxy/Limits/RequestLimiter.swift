import Config
import Synchronization

/// The limits of one route or one credential (`limits:`), shared by every worker: a token
/// bucket and a budget under one lock (held for a few arithmetic operations per request on a
/// limited route; unlimited routes never touch it).
final class RequestLimiter: Sendable {
    /// `route api.test:443` or `credential partner`: what refusals, the status page and metrics
    /// call it.
    let scope: String
    /// The configuration it enforces (a reload that keeps it keeps the state too).
    let config: LimitsConfig
    private let state: Mutex<State>

    private struct State {
        var bucket: TokenBucket?
        var budget: RequestBudget?
        var refusedRate: UInt64 = 0
        var refusedBudget: UInt64 = 0
        /// Whether the fleet's store answered the last send of the budget (nil: not shared).
        var budgetShared: Bool?
        /// Whether the fleet's store answered the last send of the rate (nil: not shared).
        var rateShared: Bool?
    }

    /// A limiter with a full bucket and an unspent budget at `now` (monotonic nanoseconds).
    init(scope: String, config: LimitsConfig, now: UInt64) {
        self.scope = scope
        self.config = config
        state = Mutex(State(bucket: config.rate.map { TokenBucket(perSecond: $0.perSecond, burst: $0.burst, now: now) },
                            budget: config.budget.map { RequestBudget(requests: $0.requests, period: $0.per.seconds) }))
    }

    /// Admits one request (taking a token and a unit of budget) or says which limit refuses it.
    /// The budget is asked first: a request it refuses does not take a token.
    func admit(now: UInt64, wall: Int) -> LimitVerdict {
        state.withLock { state in
            if let budget = state.budget, budget.remaining(at: wall) == 0 {
                state.refusedBudget += 1
                return .refused(scope: scope, kind: .budget, retryAfter: budget.secondsToNextPeriod(at: wall))
            }
            if let wait = state.bucket?.take(at: now) {
                state.refusedRate += 1
                return .refused(scope: scope, kind: .rate, retryAfter: wait)
            }
            _ = state.budget?.take(at: wall)
            return .admitted
        }
    }

    /// Gives back what ``admit(now:wall:)`` took (another limit refused the request). Had a send
    /// to the fleet's store gone between the two (a window of a few instructions), the fleet
    /// counts that request though it never went: a token at most, not worth a message.
    func refund(wall: Int) {
        state.withLock { state in
            state.bucket?.refund()
            state.budget?.refund(at: wall)
        }
    }

    /// Requests admitted and not yet sent to the fleet's store; nil without a budget.
    func unsentBudget() -> Int? {
        state.withLock { $0.budget?.unsynced }
    }

    /// What to send to the fleet's store (``RequestBudget/send(at:)``); nil without a budget.
    func sendBudget(wall: Int) -> (window: Int, delta: Int)? {
        state.withLock { $0.budget?.send(at: wall) }
    }

    /// Tokens taken and not yet sent to the fleet's store; nil without a rate.
    func unsentRate() -> Int? {
        state.withLock { $0.bucket?.unsynced }
    }

    /// What to send to the fleet's store (``TokenBucket/send()``); nil without a rate.
    func sendRate() -> Int? {
        state.withLock { $0.bucket?.send() }
    }

    /// The store answered a send of the rate with the fleet's level (nil: it failed; the bucket
    /// is kept locally meanwhile, and what that send carried is not sent again: a rate is about
    /// now).
    func rateSynced(fleet: Double?, now: UInt64) {
        state.withLock { state in
            if let fleet { state.bucket?.answered(fleet: fleet, at: now) }
            state.rateShared = fleet != nil
        }
    }

    /// The store answered a send with the fleet's count (nil: it failed; the budget is kept
    /// locally with what is known). Returns whether requests wait to be sent.
    func budgetSynced(window: Int, count: Int?) -> Bool {
        state.withLock { state in
            if let count {
                state.budget?.answered(window: window, count: count)
            } else {
                state.budget?.failed(window: window)
            }
            state.budgetShared = count != nil
            return (state.budget?.unsynced ?? 0) > 0
        }
    }

    /// What is left now, for the status page and `/metrics`.
    func status(now: UInt64, wall: Int) -> LimitStatus {
        state.withLock { state in
            LimitStatus(scope: scope, rateTokens: state.bucket?.available(at: now), budgetRemaining: state.budget?.remaining(at: wall),
                        budgetResetsIn: state.budget?.secondsToNextPeriod(at: wall), refusedRate: state.refusedRate,
                        refusedBudget: state.refusedBudget, budgetShared: state.budgetShared, rateShared: state.rateShared, config: config)
        }
    }
}

/// What is left of one route's or credential's limits.
public struct LimitStatus: Sendable, Equatable {
    /// `route api.test:443` or `credential partner`.
    public let scope: String
    /// Tokens in the bucket (nil: no rate).
    public let rateTokens: Double?
    /// Requests left in the current period (nil: no budget).
    public let budgetRemaining: Int?
    /// Seconds until the period ends (nil: no budget).
    public let budgetResetsIn: Int?
    /// Requests refused by the rate.
    public let refusedRate: UInt64
    /// Requests refused by the budget.
    public let refusedBudget: UInt64
    /// For a budget shared by the fleet: whether its store answered the last time (false: it is
    /// kept locally meanwhile); nil when not shared.
    public let budgetShared: Bool?
    /// For a rate shared by the fleet: the same for the rate's bucket.
    public let rateShared: Bool?
    /// The configured limits.
    public let config: LimitsConfig
}
