import Glibc

/// A value behind a `pthread_mutex_t`, for the few things threads share (cross-loop work
/// queues, published token snapshots).
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer does not see the futex
/// hand-off of Swift 6.3's `Mutex` on Linux and reports false races, while it understands
/// pthread mutexes — and CI runs the tests under ThreadSanitizer.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Wraps `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
