import EventLoop

/// Time for a managed credential: monotonic now, wall-clock now and timers. Injectable so
/// tests can use a manual clock.
public protocol TokenClock: Sendable {
    /// The monotonic now (any thread).
    var now: ContinuousClock.Instant { get }
    /// Seconds since 1970 (JWT `exp`, `Retry-After` dates).
    var wallClockSeconds: Double { get }
    /// Runs `action` on `loop` after `delay`, unless cancelled first. Called on `loop`'s thread.
    func schedule(on loop: EventLoop, after delay: Duration, _ action: @escaping () -> Void) -> any TokenScheduledTask
}

/// A scheduled action that can be cancelled.
public protocol TokenScheduledTask: AnyObject {
    /// Prevents the action from running (no effect once it ran).
    func cancel()
}

extension Timer: TokenScheduledTask {}

/// The real clocks and libevent timers.
public struct SystemTokenClock: TokenClock {
    /// Creates the system clock.
    public init() {}

    /// `ContinuousClock.now`.
    public var now: ContinuousClock.Instant { ContinuousClock.now }

    /// `Date().timeIntervalSince1970`.
    public var wallClockSeconds: Double { WallClock.secondsSince1970() }

    /// A ``Timer`` on `loop`.
    public func schedule(on loop: EventLoop, after delay: Duration, _ action: @escaping () -> Void) -> any TokenScheduledTask {
        Timer(on: loop, after: max(delay, .zero), action)
    }
}
