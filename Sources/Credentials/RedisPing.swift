import Config
import EventLoop
import Foundation
import Redis

/// `check --ping`: one `PING` (after `AUTH` and `SELECT`) to the shared cache, on a loop of its own.
public enum RedisPing {
    /// `PONG` and the round trip, or why not (never a secret).
    public static func ping(_ config: SharedCacheConfig) throws -> Result<Duration, RedisError> {
        let settings = try SharedCacheFactory.clientSettings(config)
        let thread = try LoopThread { _ in }
        try thread.start()
        defer { thread.stopAndJoin() }
        let outcome = Locked<Result<Duration, RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let box = ClientBox(settings: settings, loop: thread.loop)
        thread.loop.execute {
            let started = ContinuousClock.now
            box.client.send("PING") { result in
                switch result {
                case .success(.simpleString("PONG")): outcome.withLock { $0 = .success(ContinuousClock.now - started) }
                case .success: outcome.withLock { $0 = .failure(.protocolViolation("unexpected reply to PING")) }
                case .failure(let error): outcome.withLock { $0 = .failure(error) }
                }
                box.client.close()
                done.signal()
            }
        }
        // The client's own timeout ends the wait; the margin covers connecting.
        _ = done.wait(timeout: .now() + .milliseconds(Int(RedisTokenStore.milliseconds(settings.timeout)) + 5000))
        return outcome.withLock { $0 } ?? .failure(.timeout)
    }
}

/// Carries the loop-confined client into the loop (created here, used only there).
private final class ClientBox: @unchecked Sendable {
    let client: RedisClient
    init(settings: RedisClientSettings, loop: EventLoop) { client = RedisClient(settings: settings, loop: loop) }
}
