import EventLoop
import Logging
import TokenManager
import XCTest

/// The variants of a route's token (scope sets, audiences, callers): one credential per key,
/// at most `capacity` held (least recently used dropped), idle ones dropped, keys that never
/// contain a caller's token.
final class TokenVariantsTests: XCTestCase {
    /// A clock the test moves by hand; timers never fire (the sweep is called directly).
    private final class SteppedClock: TokenClock, @unchecked Sendable {
        private let instant = Locked(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.value }
        var wallClockSeconds: Double { 1_800_000_000 }
        func advance(_ by: Duration) { instant.update { $0 += by } }
        func schedule(on loop: EventLoop, after delay: Duration, _ action: @escaping () -> Void) -> any TokenScheduledTask {
            Timer(on: loop, after: .seconds(3600), action)
        }
    }

    private var harness: LoopHarness!
    private let clock = SteppedClock()

    override func setUpWithError() throws { harness = try LoopHarness() }
    override func tearDown() { harness.stop() }

    private func variants(capacity: Int, idle: Duration = .seconds(900)) -> TokenVariants {
        let loop = harness.loop
        return TokenVariants(name: "partner", capacity: capacity, idleTimeout: idle, loop: loop, clock: clock) { key, _, _ in
            let request = try! TokenEndpointRequest.oauth2(tokenURL: "http://127.0.0.1:1/token", clientId: "c", secret: "s", scope: key.scope)
            return ManagedCredential(name: "partner", source: .fixed(request), loop: loop, logger: Logger(label: "test"), variant: key.description)
        }
    }

    func testOneCredentialPerSetWhateverTheOrderOrDuplicates() {
        let table = variants(capacity: 10)
        let first = table.credential(for: TokenVariantKey(scopes: ["write", "read", "read"]), subject: nil)
        let second = table.credential(for: TokenVariantKey(scopes: ["read", "write"]), subject: nil)
        XCTAssertTrue(first === second)
        XCTAssertEqual(TokenVariantKey(scopes: ["write", "read"]).scope, "read write")
        XCTAssertFalse(first === table.credential(for: TokenVariantKey(scopes: ["read"]), subject: nil))
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(first.variant, "scope=read write")
        XCTAssertEqual(first.name, "partner", "metrics see the credential, not the set")
    }

    func testAtMostCapacityAreHeldAndTheLeastRecentlyUsedGoes() {
        let table = variants(capacity: 3)
        let kept = table.credential(for: TokenVariantKey(scopes: ["s0"]), subject: nil)
        for index in 1..<10 {
            clock.advance(.seconds(1))
            _ = table.credential(for: TokenVariantKey(scopes: ["s\(index)"]), subject: nil)
            clock.advance(.seconds(1))
            XCTAssertTrue(table.credential(for: TokenVariantKey(scopes: ["s0"]), subject: nil) === kept, "used, so kept")
            XCTAssertLessThanOrEqual(table.count, 3)
        }
        XCTAssertEqual(table.count, 3)
        XCTAssertEqual(table.droppedCount, 7)
        XCTAssertEqual(table.credentials.first?.variant, "scope=s0", "most recently used first")
    }

    func testUnusedVariantsAreDroppedAfterTheIdleTimeout() {
        let table = variants(capacity: 10, idle: .seconds(60))
        let old = table.credential(for: TokenVariantKey(audience: "https://a.test"), subject: nil)
        clock.advance(.seconds(45))
        _ = table.credential(for: TokenVariantKey(audience: "https://b.test"), subject: nil)
        clock.advance(.seconds(30))
        table.dropIdle()
        XCTAssertEqual(table.credentials.map(\.variant), ["audience=https://b.test"])
        XCTAssertEqual(table.droppedCount, 1)
        XCTAssertFalse(table.credential(for: TokenVariantKey(audience: "https://a.test"), subject: nil) === old,
                       "a dropped variant is made anew")
    }

    func testASubjectIsKeyedByItsDigestOnly() {
        let alice = TokenVariantKey(subject: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln")
        let bob = TokenVariantKey(subject: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2ln")
        XCTAssertNotEqual(alice, bob)
        XCTAssertEqual(alice.subjectDigest, Digest.sha256Hex("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"))
        XCTAssertEqual(alice.description, "subject=sha256:\(alice.subjectDigest!.prefix(8))")
        XCTAssertFalse(alice.description.contains("eyJ"), "never the token")
        XCTAssertEqual(TokenVariantKey().description, "default")
    }
}
