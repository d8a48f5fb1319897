import EventLoop
import Foundation

/// Runs `body` on `loop`'s thread and returns its result (waits at most 5 s).
public func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) -> T? {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    loop.execute {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    guard done.wait(timeout: .now() + 5) == .success else { return nil }
    return result.withLock { $0 }
}

/// Polls `condition` (on the test thread) every 10 ms until it holds or `timeout` passes.
public func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Carries a loop-confined object into `@Sendable` closures that run on its loop.
public struct LoopObject<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}

public let loopback = try! SocketAddress(host: "127.0.0.1", port: 0)
