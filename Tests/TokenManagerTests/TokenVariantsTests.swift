import Crypto
import EventLoop
import Foundation
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

    func testWithoutUseTheOldestGoFirst() {
        let table = variants(capacity: 3)
        for index in 0..<10 {
            clock.advance(.seconds(1))
            _ = table.credential(for: TokenVariantKey(scopes: ["s\(index)"]), subject: nil)
        }
        XCTAssertEqual(table.count, 3)
        XCTAssertEqual(table.droppedCount, 7)
        XCTAssertEqual(table.credentials.map(\.variant), ["scope=s9", "scope=s8", "scope=s7"])
    }

    func testTouchingAVariantSparesItAndTheNextOldestGoes() {
        let table = variants(capacity: 3)
        let a = table.credential(for: TokenVariantKey(scopes: ["a"]), subject: nil)
        clock.advance(.seconds(1))
        _ = table.credential(for: TokenVariantKey(scopes: ["b"]), subject: nil)
        clock.advance(.seconds(1))
        _ = table.credential(for: TokenVariantKey(scopes: ["c"]), subject: nil)
        clock.advance(.seconds(1))
        XCTAssertTrue(table.credential(for: TokenVariantKey(scopes: ["a"]), subject: nil) === a)
        clock.advance(.seconds(1))
        _ = table.credential(for: TokenVariantKey(scopes: ["d"]), subject: nil)
        XCTAssertEqual(table.credentials.map(\.variant), ["scope=d", "scope=a", "scope=c"], "b was the least recently used")
        XCTAssertEqual(table.droppedCount, 1)
        XCTAssertTrue(table.credential(for: TokenVariantKey(scopes: ["a"]), subject: nil) === a)
    }

    func testAVariantIsMadeOnceWithItsSubjectAndNotStarted() {
        let made = Locked<[String?]>([])
        let loop = harness.loop
        let table = TokenVariants(name: "sts", capacity: 10, loop: loop, clock: clock) { key, subject, _ in
            made.update { $0.append(subject) }
            let request = try! TokenEndpointRequest.oauth2(tokenURL: "http://127.0.0.1:1/token", clientId: "c", secret: "s")
            return ManagedCredential(name: "sts", request: request, loop: loop, logger: Logger(label: "test"))
        }
        let key = TokenVariantKey(scopes: ["read"], subject: "caller-token")
        let first = table.credential(for: key, subject: "caller-token")
        for _ in 0..<5 { XCTAssertTrue(table.credential(for: key, subject: "caller-token") === first) }
        XCTAssertEqual(made.value, ["caller-token"], "made once, with the subject to exchange")
        _ = table.credential(for: TokenVariantKey(scopes: ["read"], subject: "other-caller"), subject: "other-caller")
        XCTAssertEqual(made.value, ["caller-token", "other-caller"], "another caller gets a token of its own")
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(first.status.phase, .idle, "nothing fetched until a request waits for it")
        XCTAssertNil(first.currentToken())
    }

    func testIdleMeansUnusedForLongerThanTheTimeout() {
        let table = variants(capacity: 10, idle: .seconds(60))
        let kept = table.credential(for: TokenVariantKey(scopes: ["read"]), subject: nil)
        clock.advance(.seconds(45))
        XCTAssertTrue(table.credential(for: TokenVariantKey(scopes: ["read"]), subject: nil) === kept, "a use restarts the idle time")
        clock.advance(.seconds(60))
        table.dropIdle()
        XCTAssertEqual(table.count, 1, "unused for exactly the timeout: kept")
        XCTAssertEqual(table.droppedCount, 0)
        clock.advance(.seconds(1))
        table.dropIdle()
        XCTAssertEqual(table.count, 0)
        XCTAssertEqual(table.droppedCount, 1)
    }

    func testAKeyShowsScopesAudienceAndOnlyAShortDigestOfTheSubject() throws {
        let subject = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYXJvbCJ9.c2lnbmF0dXJl"
        let key = TokenVariantKey(scopes: ["write", "read", "read"], audience: "https://a.test", subject: subject)
        let digest = try XCTUnwrap(key.subjectDigest)
        XCTAssertEqual(key.description, "scope=read write, audience=https://a.test, subject=sha256:\(digest.prefix(8))")
        let shown = try XCTUnwrap(key.description.components(separatedBy: "subject=").last)
        XCTAssertTrue(shown.hasPrefix("sha256:"))
        let hex = shown.dropFirst("sha256:".count)
        XCTAssertEqual(hex.count, 8)
        XCTAssertTrue(hex.allSatisfy { $0.isHexDigit }, String(hex))
        for part in subject.split(separator: ".") { XCTAssertFalse(key.description.contains(part), String(part)) }
        XCTAssertEqual(key, TokenVariantKey(scopes: ["read", "write"], audience: "https://a.test", subject: subject))
        XCTAssertNotEqual(key, TokenVariantKey(scopes: ["read", "write"], audience: "https://a.test", subject: subject + "x"))
        XCTAssertNotEqual(key, TokenVariantKey(scopes: ["read", "write"], audience: "https://b.test", subject: subject))
        XCTAssertEqual(TokenVariantKey(scopes: []).scope, nil, "no scopes: the credential's own")
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
