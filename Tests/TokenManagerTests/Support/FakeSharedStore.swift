import EventLoop
import Foundation
import TokenManager

/// An in-memory ``SharedTokenStore`` on the token loop: keys with expiry (on the real clock),
/// completions delivered later on the loop, and failures injected per operation.
final class FakeSharedStore: SharedTokenStore, @unchecked Sendable {
    // @unchecked: used only on the token loop; the test reads `values` after the loop settled.
    /// Operations that fail (by name: read, lease, write, delete), or every one with `all`.
    var failing: Set<String> = []
    private(set) var values: [String: (value: [UInt8], until: ContinuousClock.Instant)] = [:]
    private(set) var operations: [String] = []
    private let loop: EventLoop

    init(loop: EventLoop) { self.loop = loop }

    /// Sets a value directly (as someone with access to Redis could).
    func put(_ key: String, _ value: [UInt8], ttl: Duration = .seconds(60)) {
        values[key] = (value, ContinuousClock.now + ttl)
    }

    private func live(_ key: String) -> [UInt8]? {
        guard let entry = values[key], ContinuousClock.now < entry.until else {
            values[key] = nil
            return nil
        }
        return entry.value
    }

    private func later(_ name: String, _ work: @escaping () -> Void, failure: @escaping () -> Void) {
        operations.append(name)
        let fails = failing.contains(name) || failing.contains("all")
        let box = WorkBox(fails ? failure : work)
        loop.execute { box.work() }
    }

    func read(_ key: String, _ completion: @escaping (Result<[UInt8]?, SharedStoreFailure>) -> Void) {
        later("read", { [self] in completion(.success(live(key))) }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }

    func acquireLease(_ key: String, owner: String, ttl: Duration, _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void) {
        later("lease", { [self] in
            if live(key) != nil { return completion(.success(false)) }
            put(key, Array(owner.utf8), ttl: ttl)
            completion(.success(true))
        }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }

    func write(_ key: String, value: [UInt8], ttl: Duration, _ completion: @escaping (Result<Void, SharedStoreFailure>) -> Void) {
        later("write", { [self] in
            put(key, value, ttl: ttl)
            completion(.success(()))
        }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }

    func add(_ key: String, _ delta: Int, ttl: Duration, _ completion: @escaping (Result<Int, SharedStoreFailure>) -> Void) {
        later("add", { [self] in
            let current = live(key).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
            let value = current + delta
            let until = values[key]?.until ?? ContinuousClock.now + ttl
            values[key] = (Array(String(value).utf8), until)
            completion(.success(value))
        }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }

    /// Token buckets (``take(_:_:perSecond:burst:ttl:_:)``), refilled by the real clock.
    private var buckets: [String: (tokens: Double, at: ContinuousClock.Instant)] = [:]

    /// Takes from a bucket as Redis's script does (the debt floored the same way).
    func take(_ key: String, _ count: Int, perSecond: Double, burst: Int, ttl: Duration,
              _ completion: @escaping (Result<Double, SharedStoreFailure>) -> Void) {
        later("take", { [self] in
            let now = ContinuousClock.now
            let (stored, at) = buckets[key] ?? (Double(burst), now)
            var tokens = stored
            let elapsed = now - at
            tokens = min(Double(burst), tokens + (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * perSecond)
            tokens = max(-16 * (perSecond + Double(burst)), tokens - Double(count))
            buckets[key] = (tokens, now)
            completion(.success(tokens))
        }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }

    func deleteIfEqual(_ key: String, value: [UInt8], _ completion: @escaping (Result<Bool, SharedStoreFailure>) -> Void) {
        later("delete", { [self] in
            guard live(key) == value else { return completion(.success(false)) }
            values[key] = nil
            completion(.success(true))
        }, failure: { completion(.failure(SharedStoreFailure("injected"))) })
    }
}

/// Carries a loop-confined closure into `execute` (created and run on the same loop).
private final class WorkBox: @unchecked Sendable {
    let work: () -> Void
    init(_ work: @escaping () -> Void) { self.work = work }
}
