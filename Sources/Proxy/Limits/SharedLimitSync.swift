import EventLoop
import Glibc
import TokenManager

/// Shares one limiter's budget with the fleet through the shared cache's store (Redis): every
/// 10 ms (or at once after an answer, when more requests were admitted meanwhile) it adds what
/// this process admitted to the period's counter and takes the fleet's count back, so each
/// replica refuses once the fleet spent the budget — exact within a round trip and a tick.
/// When the store fails, the budget is kept locally with what is known and the unsent requests
/// are sent once it answers again. Confined to the token loop (the store's).
final class SharedBudgetSync {
    /// How often the fleet's count is asked for.
    static let interval: Duration = .milliseconds(10)
    /// At most one store operation in flight; idle, a plain read every this many ticks.
    static let idleTicks = 10
    private let limiter: RequestLimiter
    private let store: any SharedTokenStore
    private let keyPrefix: String
    private let period: Int
    private let loop: EventLoop
    private var timer: Timer?
    private var sending = false
    private var idle = 0
    private var stopped = false

    /// A sync for `limiter` (which has a budget) on `loop`; nothing happens before ``start()``.
    init(limiter: RequestLimiter, period: Int, store: any SharedTokenStore, keyPrefix: String, loop: EventLoop) {
        self.limiter = limiter
        self.period = period
        self.store = store
        self.keyPrefix = keyPrefix
        self.loop = loop
    }

    /// The counter of `window`: the scope with its spaces and colons made plain.
    func key(_ window: Int) -> String {
        let scope = String(limiter.scope.map { $0 == " " || $0 == ":" ? "_" : $0 })
        return "\(keyPrefix)budget:\(scope):\(period):\(window)"
    }

    /// Starts the ticks (on the loop).
    func start() {
        loop.assertConfined()
        timer = Timer(on: loop, after: Self.interval, repeating: Self.interval) { [unowned self] in tick() }
    }

    /// Stops for good (a reload removed or changed the limits).
    func stop() {
        loop.assertConfined()
        stopped = true
        timer = nil
    }

    private func tick(force: Bool = false) {
        guard !sending, !stopped, let waiting = limiter.unsentBudget() else { return }
        idle = waiting == 0 ? idle + 1 : 0
        guard force || waiting > 0 || idle >= Self.idleTicks else { return }
        idle = 0
        guard let sent = limiter.sendBudget(wall: time(nil)) else { return }
        sending = true
        store.add(key(sent.window), sent.delta, ttl: .seconds(period + 60)) { [weak self] result in
            guard let self else { return }
            sending = false
            let count: Int? = if case .success(let value) = result { value } else { nil }
            let more = limiter.budgetSynced(window: sent.window, count: count)
            // Requests admitted while this was in flight go at once: the fleet learns them
            // within a round trip.
            if more && count != nil && !stopped { tick(force: true) }
        }
    }
}
