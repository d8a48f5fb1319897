import EventLoop
import Glibc
import TokenManager

/// Shares one limiter's budget and rate with the fleet through the shared cache's store
/// (Redis): every 10 ms (or at once after an answer, when more requests were admitted
/// meanwhile) it adds what this process admitted to the budget's period counter and takes the
/// tokens this process took from the fleet's bucket, and takes the fleet's count and level back,
/// so each replica refuses once the fleet spent the budget or the rate — exact within a round
/// trip and a tick. When the store fails, the limits are kept locally with what is known; the
/// budget's unsent requests are sent once it answers again (a rate's are not: it is about now).
/// Confined to the token loop (the store's).
final class SharedLimitSync {
    /// How often the fleet's count is asked for.
    static let interval: Duration = .milliseconds(10)
    /// At most one store operation in flight per limit; idle, a plain read every this many ticks.
    static let idleTicks = 10
    private let limiter: RequestLimiter
    private let store: any SharedTokenStore
    private let keyPrefix: String
    private let loop: EventLoop
    private var timer: Timer?
    private var budget = Channel()
    private var rate = Channel()
    private var stopped = false

    /// One limit's exchange with the store: whether a send is in flight, and idle ticks since
    /// the last.
    private struct Channel {
        var sending = false
        var idle = 0

        /// Whether to send now, with `waiting` requests unsent (nil: no such limit).
        mutating func due(_ waiting: Int?, force: Bool) -> Bool {
            guard !sending, let waiting else { return false }
            idle = waiting == 0 ? idle + 1 : 0
            guard force || waiting > 0 || idle >= SharedLimitSync.idleTicks else { return false }
            idle = 0
            return true
        }
    }

    /// A sync for `limiter` (which has a budget or a rate) on `loop`; nothing happens before
    /// ``start()``.
    init(limiter: RequestLimiter, store: any SharedTokenStore, keyPrefix: String, loop: EventLoop) {
        self.limiter = limiter
        plainScope = String(limiter.scope.map { $0 == " " || $0 == ":" ? "_" : $0 })
        self.store = store
        self.keyPrefix = keyPrefix
        self.loop = loop
    }

    /// The scope with its spaces and colons made plain, for keys.
    private let plainScope: String

    /// The budget's counter of `window`.
    func budgetKey(_ window: Int) -> String {
        "\(keyPrefix)budget:\(plainScope):\(limiter.config.budget?.per.seconds ?? 0):\(window)"
    }

    /// The rate's bucket (its numbers in the key: a changed rate is a new bucket).
    func rateKey() -> String {
        let rate = limiter.config.rate
        return "\(keyPrefix)rate:\(plainScope):\(rate?.perSecondText ?? ""):\(rate?.burst ?? 0)"
    }

    /// Starts the ticks (on the loop).
    func start() {
        loop.assertConfined()
        timer = Timer(on: loop, after: Self.interval, repeating: Self.interval) { [unowned self] in
            tickBudget()
            tickRate()
        }
    }

    /// Stops for good (a reload removed or changed the limits).
    func stop() {
        loop.assertConfined()
        stopped = true
        timer = nil
    }

    private func tickBudget(force: Bool = false) {
        guard !stopped, budget.due(limiter.unsentBudget(), force: force),
              let period = limiter.config.budget?.per.seconds, let sent = limiter.sendBudget(wall: time(nil)) else { return }
        budget.sending = true
        store.add(budgetKey(sent.window), sent.delta, ttl: .seconds(period + 60)) { [weak self] result in
            guard let self else { return }
            budget.sending = false
            let count: Int? = if case .success(let value) = result { value } else { nil }
            let more = limiter.budgetSynced(window: sent.window, count: count)
            // Requests admitted while this was in flight go at once: the fleet learns them
            // within a round trip.
            if more && count != nil && !stopped { tickBudget(force: true) }
        }
    }

    private func tickRate(force: Bool = false) {
        guard !stopped, rate.due(limiter.unsentRate(), force: force),
              let config = limiter.config.rate, let taken = limiter.sendRate() else { return }
        rate.sending = true
        // Kept while it refills from empty, and a minute more.
        let ttl = Duration.seconds(60) + .seconds(Double(config.burst) / config.perSecond)
        store.take(rateKey(), taken, perSecond: config.perSecond, burst: config.burst, ttl: ttl) { [weak self] result in
            guard let self else { return }
            rate.sending = false
            let fleet: Double? = if case .success(let value) = result { value } else { nil }
            limiter.rateSynced(fleet: fleet, now: Timer.monotonicNow())
            if fleet != nil && !stopped && (limiter.unsentRate() ?? 0) > 0 { tickRate(force: true) }
        }
    }
}
