import EventLoop

/// How many HTTP/2 streams a worker starts (gives a session: routing, token, upstream) per loop
/// iteration, shared round-robin by the connections that have streams waiting.
///
/// Why: a burst of new streams (50 connections × 100 streams written at once, as an app that
/// never reads does) would otherwise all start in the iteration that read them — a thousand
/// sessions, milliseconds of work — while another app's connection, read in the same iteration,
/// waits behind them. With a budget per iteration, the next iteration comes after a bounded
/// amount of work, and each waiting connection gets its share of it, the newest as much as the
/// oldest.
///
/// The budget is half the worker's streams (``HTTP2ServerSession/workerStreamLimit``): a burst
/// to the limit starts over two iterations (a start is about 2 µs, more when it opens an upstream
/// connection: an iteration stays within a few milliseconds; the no-read attack's canary p99 was
/// 3–10 ms with it), while a steady load of a few hundred streams in flight never waits. A smaller
/// budget (128 until 2026-11-26) split such a load's reads across iterations: its responses left
/// in more, smaller writes, the app sent its next requests in the same small batches, and the
/// worker served 0.8× the streams per second it serves with this one (h2load, 50 × 10).
///
/// The budget's arithmetic is ``StreamStartBudget``'s; this holds it, the connections waiting,
/// and the timer that refills it in a later iteration. Confined to its worker's loop.
final class HTTP2StreamStarts {
    /// Streams started per loop iteration, at most.
    static let perIteration = HTTP2ServerSession.workerStreamLimit / 2

    private var budget = StreamStartBudget(capacity: HTTP2StreamStarts.perIteration)
    private var waiting: [HTTP2ServerSession] = []
    private let refillTimer: Timer

    init(loop: EventLoop) {
        refillTimer = Timer(on: loop) {}
        refillTimer.action = { [unowned self] in refill() }
    }

    /// How many of `wanted` streams `session` may start now (at most `wanted`).
    func take(_ wanted: Int) -> Int {
        let (granted, askRefill) = budget.take(wanted)
        if askRefill { refillTimer.schedule(after: .zero) }
        return granted
    }

    /// `session` has streams left to start: it is called again (``HTTP2ServerSession/startPending(limit:)``)
    /// in a later iteration, after the connections waiting before it.
    func wait(_ session: HTTP2ServerSession) {
        guard !waiting.contains(where: { $0 === session }) else { return }
        waiting.append(session)
        if budget.waiting() { refillTimer.schedule(after: .zero) }
    }

    /// Forgets the connections waiting (their worker closed them all): a waiting connection
    /// holds its sessions, each its worker's context, which holds this — a cycle that kept a
    /// stopped worker's context, loop and event base alive when no refill came to break it.
    func forgetWaiting() {
        waiting.removeAll()
    }

    /// A later iteration: a full budget, shared by the connections that waited.
    private func refill() {
        budget.refill()
        let sessions = waiting
        waiting.removeAll()
        let share = max(1, Self.perIteration / max(1, sessions.count))
        for session in sessions { session.startPending(limit: share) }
    }
}
