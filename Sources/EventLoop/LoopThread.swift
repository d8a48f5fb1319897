import CLibevent
import Glibc

/// A POSIX thread that runs one ``EventLoop`` until it is stopped.
///
/// Started with `pthread_create` rather than Swift concurrency: the loop blocks its thread in
/// `event_base_loop` by design, and the objects it owns are confined to it.
public final class LoopThread: @unchecked Sendable {
    /// The loop this thread runs.
    public let loop: EventLoop
    private var thread: pthread_t?
    private let setup: @Sendable (EventLoop) -> Void

    /// Creates the thread's loop; `setup` runs on the new thread before the loop starts
    /// (create listeners and per-loop state there, so they are born on their own thread).
    public init(setup: @escaping @Sendable (EventLoop) -> Void) throws(EventLoopError) {
        self.loop = try EventLoop()
        self.setup = setup
    }

    /// Starts the thread.
    public func start() throws(EventLoopError) {
        var handle = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&handle, nil, { raw in
            let me = Unmanaged<LoopThread>.fromOpaque(raw!).takeRetainedValue()
            me.setup(me.loop)
            me.loop.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<LoopThread>.fromOpaque(context).release()
            throw .system("pthread_create failed: \(result)")
        }
        thread = handle
    }

    /// Asks the loop to stop and waits for the thread to finish.
    public func stopAndJoin() {
        loop.stop()
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }
}
