import CLibevent
import Glibc

/// Runs a handler on a loop when the process receives a signal.
///
/// libevent lets only one `event_base` per process own signal events: create every watcher on the
/// same (control) loop.
public final class SignalWatcher {
    private var event: OpaquePointer?
    private let action: () -> Void
    /// Held: the event lives on the loop's base (see ``Timer``'s loop).
    private let loop: EventLoop

    /// Watches `signal` (e.g. `SIGTERM`) on `loop` until released.
    public init(signal number: Int32, on loop: EventLoop, _ action: @escaping () -> Void) {
        self.action = action
        self.loop = loop
        let flags = Int16(EV_SIGNAL | EV_PERSIST)
        event = event_new(loop.base, number, flags, signalTrampoline, Unmanaged.passUnretained(self).toOpaque())
        if let event { event_add(event, nil) }
    }

    deinit {
        if let event { event_free(event) }
    }

    func fire() { action() }
}
