import Glibc

/// Where log lines go: stderr, written by one background thread while the proxy runs.
///
/// A worker loop that logs (access lines, one per request) only copies the formatted line into
/// a shared buffer under a mutex; the writer thread hands whole batches — what arrives within 5 ms
/// of a batch's first line — to `write(2)`. A slow or
/// stuck destination (a full pipe, a slow disk) therefore never blocks a loop: when more than
/// ``capacity`` bytes are waiting, further lines are dropped and counted, and the writer reports
/// how many once it catches up. Lines stay whole and in order.
///
/// Until ``startBackgroundWriting()`` (every command but `run`), lines are written directly.
/// The process flushes what is waiting at exit (bounded by ``exitFlushLimit``).
public final class LogWriter: @unchecked Sendable {
    /// The process's writer.
    public static let shared = LogWriter()

    /// Most bytes waiting for the writer before lines are dropped.
    public static let capacity = 4 * 1024 * 1024
    /// How long exit waits for the writer to hand over what is waiting.
    public static let exitFlushLimit: Duration = .seconds(2)
    /// How long the writer gathers lines after the first of a batch.
    static let batchDelayNanoseconds = 5_000_000
    /// A batch this large is written at once.
    static let batchBytes = 64 * 1024

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private let idle: UnsafeMutablePointer<pthread_cond_t>
    private var pending: [UInt8] = []
    private var writing = false
    private var dropped = 0
    private var background = false
    /// Flushes waiting: the writer writes at once.
    private var flushes = 0
    private let descriptor: Int32

    /// A writer to `descriptor` (stderr by default).
    public init(descriptor: Int32 = 2) {
        self.descriptor = descriptor
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        wake = .allocate(capacity: 1)
        wake.initialize(to: pthread_cond_t())
        pthread_cond_init(wake, nil)
        idle = .allocate(capacity: 1)
        idle.initialize(to: pthread_cond_t())
        pthread_cond_init(idle, nil)
    }

    /// Starts the writer thread; from now on ``write(_:)`` only queues. Idempotent.
    public func startBackgroundWriting() {
        pthread_mutex_lock(mutex)
        let already = background
        background = true
        pthread_mutex_unlock(mutex)
        if already { return }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let started = pthread_create(&thread, nil, { raw in
            Unmanaged<LogWriter>.fromOpaque(raw!).takeRetainedValue().writeForever()
            return nil
        }, context)
        if started != 0 {
            // No thread: keep writing directly.
            Unmanaged<LogWriter>.fromOpaque(context).release()
            pthread_mutex_lock(mutex)
            background = false
            pthread_mutex_unlock(mutex)
            return
        }
        pthread_detach(thread)
        atexit { LogWriter.shared.flush(within: LogWriter.exitFlushLimit) }
    }

    /// Writes one whole line (or queues it for the writer thread).
    public func write(_ line: [UInt8]) {
        pthread_mutex_lock(mutex)
        guard background else {
            pthread_mutex_unlock(mutex)
            writeAll(line)
            return
        }
        if pending.count + line.count > LogWriter.capacity {
            dropped += 1
        } else {
            let wasEmpty = pending.isEmpty
            pending.append(contentsOf: line)
            if wasEmpty { pthread_cond_signal(wake) }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Waits until everything queued so far was handed to the kernel, at most `limit`.
    public func flush(within limit: Duration) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let (seconds, attoseconds) = limit.components
        deadline.tv_sec += Int(seconds)
        deadline.tv_nsec += Int(attoseconds / 1_000_000_000)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        pthread_mutex_lock(mutex)
        flushes += 1
        pthread_cond_signal(wake)
        while background && (!pending.isEmpty || writing) {
            if pthread_cond_timedwait(idle, mutex, &deadline) == ETIMEDOUT { break }
        }
        flushes -= 1
        pthread_mutex_unlock(mutex)
    }

    private func writeForever() {
        var batch: [UInt8] = []
        while true {
            pthread_mutex_lock(mutex)
            writing = false
            if pending.isEmpty { pthread_cond_broadcast(idle) }
            while pending.isEmpty { pthread_cond_wait(wake, mutex) }
            // Lines that follow within ``batchDelay`` go out with this one: under a steady stream
            // of requests (an access or audit line each) that is one wakeup and one write(2) per
            // batch, not per line. Producers signal only an empty buffer, so this wait is not
            // woken again; a flush ends it.
            if pending.count < Self.batchBytes && flushes == 0 {
                var deadline = timespec()
                clock_gettime(CLOCK_REALTIME, &deadline)
                deadline.tv_nsec += Self.batchDelayNanoseconds
                if deadline.tv_nsec >= 1_000_000_000 {
                    deadline.tv_sec += 1
                    deadline.tv_nsec -= 1_000_000_000
                }
                while pending.count < Self.batchBytes && flushes == 0 {
                    if pthread_cond_timedwait(wake, mutex, &deadline) == ETIMEDOUT { break }
                }
            }
            swap(&batch, &pending)
            let lost = dropped
            dropped = 0
            writing = true
            pthread_mutex_unlock(mutex)
            writeAll(batch)
            batch.removeAll(keepingCapacity: batch.capacity <= 64 * 1024)
            if lost > 0 {
                writeAll(Array("{\"level\":\"warning\",\"msg\":\"\(lost) log lines dropped: the log destination did not keep up\"}\n".utf8))
            }
        }
    }

    /// `write(2)` until everything is with the kernel (or the destination fails).
    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
