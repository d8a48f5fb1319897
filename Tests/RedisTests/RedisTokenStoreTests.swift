import Credentials
import EventLoop
import Foundation
import Redis
import TokenManager
import TestSupport
import XCTest

/// The shared cache's store on a real redis-server: the lease is exclusive and expires, a
/// release never deletes a lease someone else took over, a rejected value is deleted only while
/// it is still the stored one, and values expire with their token.
final class RedisTokenStoreTests: XCTestCase {
    private var thread: LoopThread!
    private var redis: RedisServerProcess!

    override func setUpWithError() throws {
        redis = try RedisServerProcess()
        thread = try LoopThread { _ in }
        try thread.start()
    }

    override func tearDown() {
        thread?.stopAndJoin()
        redis = nil
    }

    /// Runs `body` on the loop with a store; waits until it calls `done` `count` times.
    private func withStore(count: Int = 1, _ body: @escaping @Sendable (RedisTokenStore, @escaping @Sendable () -> Void) -> Void) {
        let finished = expectation(description: "store operations")
        finished.expectedFulfillmentCount = count
        let settings = RedisClientSettings(host: "127.0.0.1", port: redis.port)
        let loop = thread.loop
        loop.execute {
            let store = RedisTokenStore(client: RedisClient(settings: settings, loop: loop))
            body(store) { finished.fulfill() }
        }
        wait(for: [finished], timeout: 10)
    }

    func testLeaseIsExclusiveAndReleasedOnlyByItsOwner() {
        let outcomes = Outcomes()
        withStore(count: 6) { store, done in
            store.acquireLease("l", owner: "a", ttl: .seconds(5)) { outcomes.add("a:\($0)"); done() }
            store.acquireLease("l", owner: "b", ttl: .seconds(5)) { outcomes.add("b:\($0)"); done() }
            store.deleteIfEqual("l", value: Array("b".utf8)) { outcomes.add("release b:\($0)"); done() }
            store.read("l") { outcomes.add("read:\((try? $0.get()).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) } ?? "nil")"); done() }
            store.deleteIfEqual("l", value: Array("a".utf8)) { outcomes.add("release a:\($0)"); done() }
            store.acquireLease("l", owner: "b", ttl: .seconds(5)) { outcomes.add("b again:\($0)"); done() }
        }
        XCTAssertEqual(outcomes.all, ["a:success(true)", "b:success(false)", "release b:success(false)", "read:a",
                                      "release a:success(true)", "b again:success(true)"])
    }

    func testLeaseExpiresAndAStolenLeaseSurvivesTheOldOwnersRelease() {
        let outcomes = Outcomes()
        withStore { store, done in
            store.acquireLease("l", owner: "dead", ttl: .milliseconds(50)) { _ in }
            loopAfter(store, .milliseconds(120)) {
                store.acquireLease("l", owner: "thief", ttl: .seconds(5)) { outcomes.add("thief:\($0)") }
                store.deleteIfEqual("l", value: Array("dead".utf8)) { outcomes.add("late release:\($0)") }
                store.read("l") { result in
                    outcomes.add("read:\((try? result.get()).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) } ?? "nil")")
                    done()
                }
            }
        }
        XCTAssertEqual(outcomes.all, ["thief:success(true)", "late release:success(false)", "read:thief"])
    }

    func testValuesAreBinarySafeAndExpire() {
        let outcomes = Outcomes()
        let value: [UInt8] = [1, 0, 13, 10, 255]
        withStore { store, done in
            store.write("t", value: value, ttl: .milliseconds(80)) { outcomes.add("write:\((try? $0.get()) != nil)") }
            store.read("t") { outcomes.add("read:\((try? $0.get()) == value)") }
            store.deleteIfEqual("t", value: [1, 0]) { outcomes.add("delete other:\($0)") }
            loopAfter(store, .milliseconds(200)) {
                store.read("t") { outcomes.add("expired:\((try? $0.get()) == .some(nil))"); done() }
            }
        }
        XCTAssertEqual(outcomes.all, ["write:true", "read:true", "delete other:success(false)", "expired:true"])
    }

    func testTheFleetBucketRefillsByRedisClockAndKeepsABoundedDebt() {
        let outcomes = Outcomes()
        @Sendable func level(_ result: Result<Double, SharedStoreFailure>) -> String {
            (try? result.get()).map { String(format: "%.0f", $0) } ?? "failed"
        }
        withStore { store, done in
            // 10/s, a burst of 5: full at first; 8 taken of 5 is a debt of 3; taking 300 more
            // floors it at 16 × (10 + 5); 500 ms later it has refilled (by about 5).
            store.take("b", 2, perSecond: 10, burst: 5, ttl: .seconds(5)) { outcomes.add("take 2:\(level($0))") }
            store.take("b", 6, perSecond: 10, burst: 5, ttl: .seconds(5)) { outcomes.add("take 6:\(level($0))") }
            store.take("b", 300, perSecond: 10, burst: 5, ttl: .seconds(5)) { outcomes.add("take 300:\(level($0))") }
            loopAfter(store, .milliseconds(500)) {
                store.take("b", 0, perSecond: 10, burst: 5, ttl: .seconds(5)) { result in
                    let tokens = (try? result.get()) ?? .nan
                    outcomes.add("refilled:\(tokens > -239.5 && tokens <= 5)")
                    done()
                }
            }
        }
        XCTAssertEqual(outcomes.all, ["take 2:3", "take 6:-3", "take 300:-240", "refilled:true"])
    }
}

/// Runs `body` on the store's loop after `delay`.
private func loopAfter(_ store: RedisTokenStore, _ delay: Duration, _ body: @escaping () -> Void) {
    let holder = TimerHolder()
    holder.timer = LoopTimer(on: store.client.loop, after: delay) {
        body()
        holder.timer = nil
    }
}

private final class TimerHolder: @unchecked Sendable {
    var timer: LoopTimer?
}

/// Outcomes recorded on the loop, read after the expectation.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String] = []
    func add(_ value: String) { lock.lock(); values.append(value); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return values }
}
