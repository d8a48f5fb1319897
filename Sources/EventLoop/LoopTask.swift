import CLibevent

/// An action that runs once, later in the current iteration of its loop, after the callbacks
/// already due (its libevent event is made active, not given a timeout; scheduled during a
/// socket's read callback, it runs at that callback's end, or after the callbacks still due
/// then: ``EventLoop/dispatchRead(_:)``): for work that gathers what several callbacks did (an
/// HTTP/2 connection's frames for every response read in one poll). Scheduling it again before
/// it ran changes nothing.
///
/// A zero-delay ``Timer`` does the same one iteration later: it reads the clock, goes through
/// the timer heap, and makes the loop poll once more (without waiting) before it runs. An
/// action that schedules more of its own work should use such a timer, so that the loop
/// polls in between; a task scheduled from its own action runs again before any poll.
///
/// Freed (and so cancelled) when released; confined to its loop's thread.
public final class LoopTask {
    private var event: OpaquePointer?
    /// Held: the event lives on the loop's base (see ``Timer``'s loop).
    private let loop: EventLoop
    /// What runs. Settable, so that an owner can keep its task in a `let` and still give it an
    /// action that refers to the owner once the owner is initialized.
    public var action: () -> Void
    /// Scheduled and not run yet.
    public private(set) var isScheduled = false

    /// A task on `loop`, not scheduled yet.
    public init(on loop: EventLoop, _ action: @escaping () -> Void) {
        self.action = action
        self.loop = loop
        event = event_new(loop.base, -1, 0, loopTaskTrampoline, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { cancel() }

    /// Runs the action later in this loop iteration, unless it is scheduled already. Scheduled
    /// during a socket's read callback, it runs at the callback's end with the other tasks that
    /// callback scheduled (``EventLoop/dispatchRead(_:)``), not through its libevent event (an
    /// activation, a dispatch and a removal each: ~300 instructions); else its event is made
    /// active.
    public func schedule() {
        guard !isScheduled, let event else { return }
        isScheduled = true
        if loop.queueAtReadEnd(self) { return }
        event_active(event, Int32(EV_TIMEOUT), 0)
    }

    /// Stops the task for good (a scheduled run does not happen).
    public func cancel() {
        if queuedAt >= 0 { loop.unqueue(self) }
        if let event { event_free(event) }
        event = nil
        isScheduled = false
    }

    /// Where it waits in its loop's list of tasks for the end of a read callback
    /// (``EventLoop/queueAtReadEnd(_:)``), or -1.
    var queuedAt = -1

    func fire() {
        isScheduled = false
        action()
    }
}
