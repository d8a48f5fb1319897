import CLibevent
import Glibc

/// A timer on a loop that can be re-armed and suspended without reallocating. Freed (and so
/// cancelled) when released.
///
/// Re-arming is lazy, because the proxy re-arms its idle and exchange timers on every request:
/// the timer remembers when its action is due, and touches libevent's timer heap (`event_add`)
/// only when the new deadline is earlier than the expiry already pending. A pending expiry that
/// comes before the deadline (the timer was pushed back, or suspended) finds nothing due and
/// re-arms for what remains. The action never runs before its deadline.
public final class Timer {
    /// The libevent event, made at the first arming: many timers are never armed (an HTTP/2
    /// stream's session never waits for a next head), and an event is an allocation and a free.
    private var event: OpaquePointer?
    /// Stopped or cancelled: not armed until renewed (``renew()``; a cancelled timer, never).
    private var cancelled = false
    /// Held strongly: the timer's libevent event lives on the loop's base, and freeing it after
    /// the base is a use after free libevent's callers cannot see (it is not instrumented, so
    /// no sanitizer reports it). Whoever holds a timer — a kept one, or one in a context whose
    /// other properties outlive its loop reference — keeps the loop with it, and no owner has
    /// to free its timers in order. (The loop holds no timer: no cycle.)
    private let loop: EventLoop
    /// What runs when the timer expires. Settable, so that an owner can keep its timer in a
    /// `let` (calls through a `var` retain the timer) and still give it an action that refers
    /// to the owner once the owner is initialized.
    public var action: () -> Void
    /// Told instead of ``action`` when set: an owner that keeps several timers tells them apart
    /// by identity, and no closure capturing it is allocated per timer (two of the allocations
    /// of every HTTP/2 stream's session were its timers' closures). Unowned: the owner holds the
    /// timer; one that outlives its owner (kept for another, ``renew()``) has none.
    public unowned var owner: (any TimerOwner)?
    private let interval: Duration?
    /// When the action is due (monotonic nanoseconds); `nil` while not scheduled.
    private var deadline: UInt64?
    /// When the libevent event will fire (monotonic nanoseconds); `nil` while not pending.
    private var pendingExpiry: UInt64?
    /// The delay of the last ``schedule(after:)`` (what a test checks before it expires the timer).
    @_spi(Testing) public private(set) var scheduledDelay: Duration?

    /// Creates a timer that runs `action` after `delay` (and then every `repeating`, if given).
    public init(on loop: EventLoop, after delay: Duration, repeating: Duration? = nil, _ action: @escaping () -> Void) {
        self.action = action
        self.interval = repeating
        self.loop = loop
        event = event_new(loop.base, -1, 0, timerTrampoline, Unmanaged.passUnretained(self).toOpaque())
        schedule(after: delay)
    }

    /// Creates a timer that is not armed yet (see ``schedule(after:)``).
    public init(on loop: EventLoop, _ action: @escaping () -> Void) {
        self.action = action
        self.interval = nil
        self.loop = loop
    }

    deinit { cancel() }

    /// (Re)arms the timer to fire once after `delay`, replacing any pending expiry.
    public func schedule(after delay: Duration) {
        // (Stopped or cancelled: not armed, nor reported as scheduled.)
        guard !cancelled else { return }
        scheduledDelay = delay
        // Most timers are re-armed with the same delay each time: converted once.
        // (Compared on attoseconds: `Duration`'s `==` is an out-of-line call.)
        if delay.attoseconds != lastDelay.duration.attoseconds { lastDelay = (delay, EventLoop.nanoseconds(delay)) }
        schedule(nanoseconds: lastDelay.nanoseconds)
    }

    /// The last delay scheduled, and in nanoseconds.
    private var lastDelay: (duration: Duration, nanoseconds: UInt64) = (.zero, 0)

    /// ``schedule(after:)`` with the delay in nanoseconds.
    func schedule(nanoseconds delay: UInt64) {
        // (Stopped or cancelled: not armed, and no deadline for a pending expiry to find.)
        guard !cancelled else { return }
        // Timeouts of a second or more, re-armed on every request, read the coarse clock (a few
        // nanoseconds against ~22 for the precise one: 7 of the 11 clock reads per proxied
        // request were these). Moved up by its resolution it is never behind the precise clock,
        // so the action still never runs early; it may run a tick late, as libevent's own
        // timers (which run on the coarse clock) do.
        let now = delay >= Timer.coarseDelay ? Timer.coarseNow() &+ loop.coarseResolution : Timer.monotonicNow()
        let due = now &+ delay
        deadline = due
        if let pending = pendingExpiry, pending <= due { return }
        arm(nanoseconds: due &- now, expiry: due)
    }

    /// Disarms the timer; it can be armed again. (A pending expiry stays and finds nothing due.)
    public func suspend() {
        deadline = nil
    }

    /// Stops the timer until it is renewed (``renew()``): like ``cancel()``, but its libevent
    /// event stays made, for the timer's next owner. A pending expiry stays too, and finds
    /// nothing due: the next owner's deadline, usually later, then needs no `event_add` (and this
    /// stop no `event_del`: an HTTP/2 stream's session stopped and armed its timer once each).
    public func stop() {
        cancelled = true
        deadline = nil
    }

    /// A timer that is done with, made as new (not armed, no owner, no action) for another
    /// owner on the same loop, with the libevent event it had (its callback argument is this
    /// timer still): a timer that is no allocation and no free, of the timer or its event (an
    /// HTTP/2 stream's session makes one and lets it go). Only for a timer made without a
    /// repeat interval. A kept timer keeps its loop, whose base its event is on.
    public func renew() {
        precondition(interval == nil, "a repeating timer renewed")
        stop()
        cancelled = false
        owner = nil
        action = {}
        scheduledDelay = nil
    }

    /// Stops the timer for good.
    public func cancel() {
        cancelled = true
        if let event { event_free(event) }
        event = nil
        deadline = nil
        pendingExpiry = nil
    }

    private func arm(nanoseconds: UInt64, expiry: UInt64) {
        // (A stopped timer keeps its event and any pending expiry: never added again until renewed.)
        guard !cancelled else { return }
        if event == nil {
            event = event_new(loop.base, -1, 0, timerTrampoline, Unmanaged.passUnretained(self).toOpaque())
        }
        guard let event else { return }
        var tv = timeval(tv_sec: Int(nanoseconds / 1_000_000_000), tv_usec: Int(nanoseconds % 1_000_000_000 / 1000))
        event_add(event, &tv)
        pendingExpiry = expiry
    }

    func fire() {
        pendingExpiry = nil
        guard let due = deadline else { return }
        let now = Timer.monotonicNow()
        if now < due {
            // Pushed back since this expiry was set: wait for the rest (at least a microsecond).
            arm(nanoseconds: max(due &- now, 1000), expiry: due)
            return
        }
        deadline = nil
        if let interval { schedule(after: interval) }
        run()
    }

    /// Runs the action, or tells the owner.
    private func run() {
        if let owner { owner.timerFired(self) } else { action() }
    }

    /// Whether the timer is armed: scheduled, and neither fired since, suspended nor cancelled.
    public var isScheduled: Bool { deadline != nil }

    /// Runs the action now, as if its deadline had passed (tests: a fake clock that jumps to
    /// the deadline). Does nothing when the timer is not armed, like a real expiry.
    @_spi(Testing) public func expire() {
        guard deadline != nil else { return }
        deadline = nil
        if let interval { schedule(after: interval) }
        run()
    }

    /// CLOCK_MONOTONIC in nanoseconds (a vDSO read, no syscall): the clock timers run on, and a
    /// cheap one for measuring durations (`ContinuousClock.now` and `Duration.components` cost
    /// several times more).
    public static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// CLOCK_MONOTONIC_COARSE in nanoseconds: the same clock as ``monotonicNow()`` as of the
    /// last tick (never ahead of it, behind by less than a tick, ``readCoarseResolution()``), read without
    /// the TSC. For deadlines that a few milliseconds do not matter to; never for durations.
    public static func coarseNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// How far ``coarseNow()`` may be behind ``monotonicNow()``: one tick (4 ms at 250 Hz).
    /// (Each loop keeps a copy: a static read here would cost a lazy-initialization check.)
    static func readCoarseResolution() -> UInt64 {
        var resolution = timespec()
        guard clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0 else { return 10_000_000 }
        return UInt64(resolution.tv_sec) &* 1_000_000_000 &+ UInt64(resolution.tv_nsec)
    }

    /// Delays from which ``schedule(after:)`` reads the coarse clock: a tick late is nothing
    /// to a timeout this long, and shorter timers (a zero delay for "next iteration") stay exact.
    static let coarseDelay: UInt64 = 1_000_000_000
}

/// ``Timer`` under a name Foundation does not also define (for files that import both; the
/// module name `EventLoop` is shadowed by the class, so `EventLoop.Timer` cannot say it).
public typealias LoopTimer = Timer

/// An object that owns timers and is told when one fires (``Timer/owner``).
public protocol TimerOwner: AnyObject {
    /// `timer`, one of the owner's, expired.
    func timerFired(_ timer: Timer)
}
