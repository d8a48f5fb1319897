import EventLoop

/// The tokens a ``DemoIssuer`` has issued and when they expire, shared with a ``DemoBackend``
/// (possibly on another loop: the table is behind a mutex; nothing here is on a hot path).
public final class DemoTokenRegistry: Sendable {
    private struct State {
        var expiries: [String: ContinuousClock.Instant] = [:]
        var issued = 0
    }

    private let state = Locked(State())

    /// Creates an empty registry.
    public init() {}

    /// Creates, records and returns a new random token `demo-<32 hex digits>` valid for `lifetime`.
    public func issue(lifetime: Duration, now: ContinuousClock.Instant = .now) -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let token = "demo-" + hex
        state.withLock { state in
            // Forget expired tokens so a long-running demo does not grow without bound.
            state.expiries = state.expiries.filter { $0.value > now }
            state.expiries[token] = now + lifetime
            state.issued += 1
        }
        return token
    }

    /// Records `token` as valid until `expiresAt` (for tests and scripted demos).
    public func insert(_ token: String, expiresAt: ContinuousClock.Instant) {
        state.withLock { $0.expiries[token] = expiresAt }
    }

    /// Whether `token` was issued here and has not expired at `now`.
    public func isValid(_ token: String, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            guard let expiry = state.expiries[token] else { return false }
            return now < expiry
        }
    }

    /// How many tokens ``issue(lifetime:now:)`` has handed out.
    public var issuedCount: Int {
        state.withLock { $0.issued }
    }
}
