import CLibevent
import Glibc

/// A timer on a loop that can be re-armed and suspended without reallocating. Freed (and so
/// cancelled) when released.
public final class Timer {
    private var event: OpaquePointer?
    private unowned(unsafe) let loop: EventLoop
    private let action: () -> Void
    private let interval: Duration?

    /// Creates a timer that runs `action` after `delay` (and then every `repeating`, if given).
    public init(on loop: EventLoop, after delay: Duration, repeating: Duration? = nil, _ action: @escaping () -> Void) {
        self.action = action
        self.interval = repeating
        self.loop = loop
        event = event_new(loop.base, -1, 0, timerTrampoline, Unmanaged.passUnretained(self).toOpaque())
        arm(delay)
    }

    /// Creates a timer that is not armed yet (see ``schedule(after:)``).
    public init(on loop: EventLoop, _ action: @escaping () -> Void) {
        self.action = action
        self.interval = nil
        self.loop = loop
        event = event_new(loop.base, -1, 0, timerTrampoline, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { cancel() }

    /// (Re)arms the timer to fire once after `delay`, replacing any pending expiry.
    public func schedule(after delay: Duration) { arm(delay) }

    /// Disarms the timer; it can be armed again.
    public func suspend() {
        if let event { event_del(event) }
    }

    /// Stops the timer for good.
    public func cancel() {
        if let event { event_free(event) }
        event = nil
    }

    private func arm(_ delay: Duration) {
        guard let event else { return }
        var tv = loop.timeval(delay)
        event_add(event, &tv)
    }

    func fire() {
        if let interval { arm(interval) }
        action()
    }
}

/// ``Timer`` under a name Foundation does not also define (for files that import both; the
/// module name `EventLoop` is shadowed by the class, so `EventLoop.Timer` cannot say it).
public typealias LoopTimer = Timer
