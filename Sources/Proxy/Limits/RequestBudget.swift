/// A budget (`limits.budget`): `requests` per UTC calendar period (minute, hour, day), counted
/// in the period the wall clock is in; a new period starts from zero. Shared by a fleet, what
/// the fleet spent comes from its store: ``synced`` (the fleet's count when the store last
/// answered, this process's part included), plus what this process admitted since — sent and
/// not answered yet (``inFlight``), not sent yet (``unsynced``). Alone, everything stays
/// ``unsynced``. A value type: ``RequestLimiter`` holds it under its lock.
struct RequestBudget: Equatable {
    /// Requests admitted per period.
    let requests: Int
    /// The period in seconds.
    let period: Int
    /// The period counted in (wall-clock seconds / period).
    private(set) var window = 0
    /// The fleet's count as the store last answered it.
    private(set) var synced = 0
    /// Admitted here, sent to the store, not answered yet.
    private(set) var inFlight = 0
    /// Admitted here, not sent to the store yet.
    private(set) var unsynced = 0

    /// A budget with nothing spent.
    init(requests: Int, period: Int) {
        self.requests = requests
        self.period = period
    }

    /// What counts against the budget in the current window.
    var used: Int { synced + inFlight + unsynced }

    /// What is left at wall-clock second `now`.
    func remaining(at now: Int) -> Int {
        now / period == window ? max(0, requests - used) : requests
    }

    /// Seconds from `now` to the next period.
    func secondsToNextPeriod(at now: Int) -> Int {
        max(1, (now / period + 1) * period - now)
    }

    /// Counts one request at `now`: nil when the budget had room, otherwise the seconds until
    /// the next period.
    mutating func take(at now: Int) -> Int? {
        roll(to: now)
        guard used < requests else { return secondsToNextPeriod(at: now) }
        unsynced += 1
        return nil
    }

    /// Gives back a request counted at `now` and not yet sent (refused by another limit).
    mutating func refund(at now: Int) {
        if now / period == window && unsynced > 0 { unsynced -= 1 }
    }

    /// What to send to the store at `now`: the window and the requests admitted since the last
    /// send (0: only ask for the fleet's count), now in flight.
    mutating func send(at now: Int) -> (window: Int, delta: Int) {
        roll(to: now)
        inFlight += unsynced
        let delta = unsynced
        unsynced = 0
        return (window, delta)
    }

    /// The store answered the send for `window` with the fleet's new count.
    mutating func answered(window answered: Int, count: Int) {
        guard answered == window else { return }
        synced = count
        inFlight = 0
    }

    /// The send for `window` failed: its requests are sent again next time, and meanwhile the
    /// budget is kept with what is known (the local fallback).
    mutating func failed(window failed: Int) {
        guard failed == window else { return }
        unsynced += inFlight
        inFlight = 0
    }

    private mutating func roll(to now: Int) {
        guard now / period != window else { return }
        window = now / period
        synced = 0
        inFlight = 0
        unsynced = 0
    }
}
