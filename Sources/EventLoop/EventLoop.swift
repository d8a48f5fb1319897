import CLibevent
import Glibc
import Synchronization

/// One libevent `event_base` and the thread that runs it.
///
/// Everything created on a loop (connections, listeners, timers) must be used only on that loop's
/// thread. The only members that are safe from any thread are ``execute(_:)`` and ``stop()``:
/// they go through a mutex-protected queue and an `eventfd` the loop watches.
///
/// libevent's own locking (`evthread_use_pthreads`) is deliberately not enabled: no libevent
/// object is ever shared between threads here, and the locks cost a mutex pair on every event
/// and buffer operation of the request path. The only cross-thread hand-off is this queue.
public final class EventLoop: @unchecked Sendable {
    let base: OpaquePointer
    private let wakeFD: Int32
    private var wakeEvent: OpaquePointer?
    private let pending = Locked<[@Sendable () -> Void]>([])
    private var resolverBase: OpaquePointer?
    /// Plain-socket connections that queued bytes during this loop iteration; written by one
    /// pass at its end (``runFlushes()``), so a head and body queued separately leave in one
    /// `writev`, and a socket that takes everything never needs write interest. Each entry
    /// holds one retain of its connection, given back once it is flushed (reading an element
    /// of an array of references retained and released it once more).
    private var flushQueue: [Unmanaged<SocketConnection>] = []
    private var flushEvent: OpaquePointer?
    /// Tasks scheduled during a socket's read callback, run at its end (``dispatchRead(_:)``).
    /// Unretained: a task cancelled or freed while it waits leaves a nil in its place.
    private var readEndTasks: [Unmanaged<LoopTask>?] = []
    /// Runs ``readEndTasks`` after the callbacks still due when a read callback ended.
    private var readEndEvent: OpaquePointer?
    /// The thread running ``run()`` (a `pthread_t`), 0 while the loop is not running. Atomic:
    /// other threads read it to find out that they are not that thread.
    private let runningThread = Atomic<UInt>(0)
    /// ``Timer/readCoarseResolution()``, read once (timers re-armed on every request use it).
    let coarseResolution = Timer.readCoarseResolution()

    /// Process-wide preparation; call once before creating loops (idempotent).
    public static func enableThreads() {
        _ = prepared
    }

    private static let prepared: Bool = {
        // libevent does not ignore SIGPIPE; a peer closing mid-write must not kill the process.
        signal(SIGPIPE, SIG_IGN)
        ChunkCache.install()
        return true
    }()

    /// Creates a loop. Call ``run()`` on the thread that will own it.
    public init() throws(EventLoopError) {
        EventLoop.enableThreads()
        guard let base = event_base_new() else { throw EventLoopError.system("event_base_new failed") }
        self.base = base
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else {
            event_base_free(base)
            throw EventLoopError.system("eventfd failed: errno \(shim_errno())")
        }
        wakeFD = fd
        guard let wake = event_new(base, fd, Int16(EV_READ | EV_PERSIST), eventLoopWakeTrampoline,
                                   Unmanaged.passUnretained(self).toOpaque()) else {
            Glibc.close(fd)
            event_base_free(base)
            throw EventLoopError.system("event_new failed")
        }
        wakeEvent = wake
        event_add(wake, nil)
        flushEvent = event_new(base, -1, 0, loopFlushTrampoline, Unmanaged.passUnretained(self).toOpaque())
        readEndEvent = event_new(base, -1, 0, loopReadEndTrampoline, Unmanaged.passUnretained(self).toOpaque())
        handshakeRefillEvent = event_new(base, -1, 0, handshakeRefillTrampoline, Unmanaged.passUnretained(self).toOpaque())
        flushQueue.reserveCapacity(64)
    }

    deinit {
        if let wakeEvent { event_free(wakeEvent) }
        if let flushEvent { event_free(flushEvent) }
        if let readEndEvent { event_free(readEndEvent) }
        if let handshakeRefillEvent { event_free(handshakeRefillEvent) }
        for entry in flushQueue { entry.release() }
        Glibc.close(wakeFD)
        if let resolverBase { evdns_base_free(resolverBase, 0) }
        event_base_free(base)
    }

    /// Runs the loop until ``stop()``; returns when it has stopped.
    public func run() {
        runningThread.store(UInt(pthread_self()), ordering: .releasing)
        defer { runningThread.store(0, ordering: .releasing) }
        // EVLOOP_NO_EXIT_ON_EMPTY: an idle proxy with no connections must keep running.
        event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
    }

    /// Whether the calling thread may touch this loop's objects: it is the thread running the
    /// loop, or the loop is not running (objects are set up before it starts and looked at
    /// after it stopped, by the thread that started or joined it).
    public var isCallerConfined: Bool {
        let running = runningThread.load(ordering: .acquiring)
        return running == 0 || running == UInt(pthread_self())
    }

    /// Stops a debug build when called on another thread than the running loop's: objects
    /// passed through C callbacks are invisible to Swift's data-race checker, so confinement
    /// is checked here instead (free in release builds).
    @inlinable
    public func assertConfined(file: StaticString = #fileID, line: UInt = #line) {
        assert(isCallerConfined, "used off its event loop's thread", file: file, line: line)
    }

    /// Stops the loop after the current callbacks. Safe from any thread.
    public func stop() {
        execute { [self] in event_base_loopbreak(self.base) }
    }

    /// Runs `work` on this loop's thread, soon. Safe from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = pending.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        if wasEmpty {
            // The first item of an empty queue wakes the loop; later ones ride along.
            var one: UInt64 = 1
            _ = Glibc.write(wakeFD, &one, 8)
        }
    }

    func drainPending() {
        // Reset the counter before taking the queue: an item added after the take finds the
        // queue empty and writes again, so nothing is left behind.
        var counter: UInt64 = 0
        _ = Glibc.read(wakeFD, &counter, 8)
        let work = pending.withLock { queue in
            let taken = queue
            queue.removeAll(keepingCapacity: true)
            return taken
        }
        for item in work { item() }
    }

    /// `duration` as a `timeval` (see ``nanoseconds(_:)``).
    static func timeval(_ duration: Duration) -> Glibc.timeval {
        let nanoseconds = nanoseconds(duration)
        let seconds = min(nanoseconds / 1_000_000_000, UInt64(Int.max))
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(nanoseconds % 1_000_000_000 / 1000))
    }

    /// `duration` in whole nanoseconds (negative durations count as zero; saturating at about
    /// 584 years). Exact: the 128-bit count of attoseconds is divided by 10⁹ with one 128-by-64
    /// bit division (`Duration.components` and `Duration / Duration` go through generic 128-bit
    /// division and floating-point conversion: 400 to 800 instructions a conversion, and the
    /// timeouts alternate between two values on every request).
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let attoseconds = duration.attoseconds
        guard attoseconds > 0 else { return 0 }
        let high = UInt64(truncatingIfNeeded: attoseconds >> 64)
        // The quotient fits in 64 bits only while the high half is below the divisor.
        guard high < 1_000_000_000 else { return .max }
        let low = UInt64(truncatingIfNeeded: attoseconds)
        return UInt64(1_000_000_000).dividingFullWidth((high: high, low: low)).quotient
    }

    /// Puts a connection with newly queued bytes on the flush list; the first one activates
    /// the flush event, which runs after the callbacks already due in this iteration.
    func scheduleFlush(_ connection: SocketConnection) {
        flushQueue.append(Unmanaged.passRetained(connection))
        // Inside a socket's read dispatch, ``dispatchRead(_:)`` decides when the dispatch ends:
        // at once when no other callback is due, else after the batch (the flush event).
        if flushQueue.count == 1, !dispatchingRead, let flushEvent { event_active(flushEvent, Int32(EV_TIMEOUT), 0) }
    }

    // MARK: - TLS handshakes per iteration

    /// TLS handshake steps the loop runs per iteration, at most. A step costs from a few
    /// microseconds to a few hundred (a client's key share; a server's certificate verified and
    /// its key share used: ECDHE and ECDSA). A burst of new connections — an HTTP/2 app's 100
    /// streams, each taking its own TLS connection to an HTTP/1.1 backend — became ready in the
    /// same `epoll_wait` and ran all their steps in one iteration: 40–80 ms in which no other
    /// client was served (the zero-window attack's canary, p99 31–55 ms; `make abuse`'s
    /// h2-zero-window row). With a budget the rest wait for the next iterations: their sockets
    /// stay ready (level-triggered), so nothing is lost, and the iteration stays short.
    static let handshakesPerIteration = 4

    private var handshakeTurnsLeft = EventLoop.handshakesPerIteration
    /// Refills the turns once the callbacks due in this iteration have run: an event made
    /// active when the first turn is taken runs after them (as the flush event does). Not
    /// libevent's cached time: it comes from the coarse monotonic clock (4 ms ticks here), so
    /// every iteration of a tick shared one budget, and a burst spun the loop for the rest of it.
    private var handshakeRefillEvent: OpaquePointer?
    private var handshakeRefillPending = false

    /// Whether a TLS handshake step may run now; false once this iteration's
    /// ``handshakesPerIteration`` ran (the step then waits for its socket's next readiness).
    func takeHandshakeTurn() -> Bool {
        guard handshakeTurnsLeft > 0 else { return false }
        handshakeTurnsLeft -= 1
        if !handshakeRefillPending, let handshakeRefillEvent {
            handshakeRefillPending = true
            event_active(handshakeRefillEvent, Int32(EV_TIMEOUT), 0)
        }
        return true
    }

    /// This iteration's callbacks ran: the next iteration has its turns.
    func refillHandshakeTurns() {
        handshakeRefillPending = false
        handshakeTurnsLeft = Self.handshakesPerIteration
    }

    /// A socket's read callback is running (``dispatchRead(_:)``): flushes and loop tasks wait
    /// for its end.
    private var dispatchingRead = false

    /// Runs `body` (a socket's read callback), then writes what it queued: at once when no
    /// other callback is due in this iteration of the loop (one request at a time: no event to
    /// activate and dispatch), else from the flush event, after the callbacks still due.
    ///
    /// Why not always at once: under load one `epoll_wait` hands the loop many ready sockets.
    /// Written as each is read, every write wakes its reader (the backend, the client) while
    /// the proxy still has sockets to read; on a shared CPU each wake-up can preempt the proxy,
    /// and the readers take one response per wake-up. Written after the last read of the batch,
    /// they are woken once for all of it (measured at c50 on one CPU: backend and client
    /// context switches per request 0.24 and 0.28 → 0.18 and 0.19, requests/s +4–6%).
    ///
    /// The loop tasks the callback scheduled (an HTTP/2 connection's turn, a session's) run at
    /// its end the same way, before the writes: at once when no other callback is due, else
    /// from one event after those (``readEndEvent``), so a connection's turn still gathers what
    /// every socket read in the same poll did. Each task through an event of its own was an
    /// activation, a dispatch and a removal in libevent (~300 instructions; five or so for a
    /// request that nothing batches).
    @inline(__always)
    func dispatchRead(_ body: () -> Void) {
        let outer = dispatchingRead
        dispatchingRead = true
        body()
        if outer { return }
        if readEndTasks.isEmpty && flushQueue.isEmpty {
            dispatchingRead = false
            return
        }
        if event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ACTIVE)) == 0 {
            // (Still dispatching: what the tasks write joins the flush list, tasks they
            // schedule join theirs and run in this pass.)
            if !readEndTasks.isEmpty { runReadEndTasks() }
            dispatchingRead = false
            if !flushQueue.isEmpty { runFlushes() }
        } else {
            dispatchingRead = false
            if !readEndTasks.isEmpty, let readEndEvent {
                event_active(readEndEvent, Int32(EV_TIMEOUT), 0)
            } else if let flushEvent {
                event_active(flushEvent, Int32(EV_TIMEOUT), 0)
            }
        }
    }

    /// Queues `task` for the end of the read callback under way; false when none is.
    func queueAtReadEnd(_ task: LoopTask) -> Bool {
        guard dispatchingRead else { return false }
        task.queuedAt = readEndTasks.count
        readEndTasks.append(Unmanaged.passUnretained(task))
        return true
    }

    /// `task` no longer waits (cancelled, or freed).
    func unqueue(_ task: LoopTask) {
        if task.queuedAt < readEndTasks.count { readEndTasks[task.queuedAt] = nil }
        task.queuedAt = -1
    }

    /// Runs the queued tasks in order, and those they queue, then forgets them.
    private func runReadEndTasks() {
        var index = 0
        while index < readEndTasks.count {
            if let entry = readEndTasks[index] {
                readEndTasks[index] = nil
                // (Retained for the call: its action may release its owner, and the owner it.)
                let task = entry.takeUnretainedValue()
                task.queuedAt = -1
                task.fire()
            }
            index += 1
        }
        readEndTasks.removeAll(keepingCapacity: true)
    }

    /// The read-end event: the queued tasks run after the callbacks that were due, then the
    /// writes they led to (as at the end of a read callback).
    func runReadEndTasksLater() {
        dispatchRead { runReadEndTasks() }
    }

    /// Writes every connection on the flush list. A write may make a delegate queue bytes on
    /// another connection; those join the list and are written in this same pass.
    func runFlushes() {
        var index = 0
        while index < flushQueue.count {
            let entry = flushQueue[index]
            index += 1
            entry._withUnsafeGuaranteedRef { $0.flushScheduled() }
            entry.release()
        }
        flushQueue.removeAll(keepingCapacity: true)
    }

    /// The loop's asynchronous DNS resolver (reads `/etc/resolv.conf` and `/etc/hosts`), created on first use.
    var resolver: OpaquePointer? {
        if resolverBase == nil {
            resolverBase = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS)
            if resolverBase == nil {
                // No usable resolv.conf (minimal containers): still resolve /etc/hosts and literals.
                resolverBase = evdns_base_new(base, 0)
                if let resolverBase { evdns_base_load_hosts(resolverBase, nil) }
            }
        }
        return resolverBase
    }
}

/// An error creating or using loop resources.
public enum EventLoopError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A system or libevent call failed; the message says which.
    case system(String)
    /// An address could not be parsed or bound.
    case address(String)

    /// A message for a person.
    public var description: String {
        switch self {
        case .system(let message), .address(let message): return message
        }
    }
}
