import CLibevent
import Glibc

/// A one-shot or repeating timer on a loop. Cancelled when released.
public final class Timer {
    private var event: OpaquePointer?
    private let action: () -> Void
    private let interval: Duration?

    /// Creates a timer that runs `action` after `delay` (and then every `repeating`, if given).
    public init(on loop: EventLoop, after delay: Duration, repeating: Duration? = nil, _ action: @escaping () -> Void) {
        self.action = action
        self.interval = repeating
        event = event_new(loop.base, -1, 0, timerTrampoline, Unmanaged.passUnretained(self).toOpaque())
        arm(delay)
    }

    deinit { cancel() }

    /// Stops the timer for good.
    public func cancel() {
        if let event { event_free(event) }
        event = nil
    }

    private func arm(_ delay: Duration) {
        guard let event else { return }
        let (seconds, attoseconds) = delay.components
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        event_add(event, &tv)
    }

    func fire() {
        if let interval { arm(interval) }
        action()
    }
}
