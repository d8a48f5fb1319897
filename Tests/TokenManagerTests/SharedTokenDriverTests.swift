import EventLoop
import Foundation
import TestSupport
import TokenManager
import XCTest

/// Managed credentials of several "replicas" (one process here) sharing tokens through a fake
/// store: one fetch for all, a corrupt entry never injected, every store failure falling back
/// to a fetch of one's own.
final class SharedTokenDriverTests: XCTestCase {
    private var server: TokenServerFixture!
    private var tokenLoop: LoopHarness!
    private let logs = LogRecorder()
    private var credentials: [ManagedCredential] = []
    private let key = [UInt8](repeating: 0x5a, count: 32)

    override func setUpWithError() throws {
        server = try TokenServerFixture(control: ["expires_in": 3600])
        tokenLoop = try LoopHarness()
    }

    override func tearDown() {
        for credential in credentials { credential.stop() }
        tokenLoop?.stop()
        server?.stop()
    }

    private func replicas(_ count: Int, store: FakeSharedStore) throws -> [ManagedCredential] {
        let request = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token", clientId: "client", secret: "s3cr3t")
        return (0..<count).map { index in
            let cache = SharedTokenCache(store: store, sealer: TokenSealer(key: key)!, keyPrefix: "t:", instanceId: "replica-\(index)",
                                         pollInterval: .milliseconds(20))
            let credential = ManagedCredential(name: "api", request: request, loop: tokenLoop.loop, logger: logs.logger,
                                               shared: cache.binding(material: "oauth2|client"))
            credentials.append(credential)
            return credential
        }
    }

    private func makeStore() -> FakeSharedStore {
        let loop = tokenLoop.loop
        return onLoop { FakeSharedStore(loop: loop) }
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = expectation(description: "on loop")
        tokenLoop.loop.execute {
            result.update { $0 = body() }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        return result.value!
    }

    func testReplicasShareOneFetch() throws {
        let store = makeStore()
        let fleet = try replicas(4, store: store)
        for credential in fleet { credential.start() }
        XCTAssertTrue(eventually { fleet.allSatisfy { $0.currentToken() != nil } })
        XCTAssertEqual(Set(fleet.map { $0.currentToken()?.value }), ["tok-1"])
        XCTAssertEqual(server.requests.count, 1)
        let counts = fleet.compactMap { $0.status.sharedCache?.counts }
        // A replica polling between the holder's write and its release may win the lease next; its
        // re-read under the lease then finds the token: more leases, never more fetches.
        XCTAssertGreaterThanOrEqual(counts.map(\.leaseWon).reduce(0, +), 1)
        XCTAssertGreaterThanOrEqual(counts.map(\.hits).reduce(0, +), 3)
        XCTAssertEqual(fleet.map { $0.status.counts.adopted }.reduce(0, +), 3)
        XCTAssertFalse(logs.text.contains("tok-1"))
        let stored = onLoop { store.values.values.map { String(decoding: $0.value, as: UTF8.self) } }
        XCTAssertFalse(stored.contains { $0.contains("tok-1") || $0.contains("s3cr3t") })
    }

    func testCorruptEntryIsNeverInjected() throws {
        let store = makeStore()
        let binding = SharedTokenCache(store: store, sealer: TokenSealer(key: key)!, keyPrefix: "t:").binding(material: "oauth2|client")
        let foreign = TokenSealer(key: [UInt8](repeating: 1, count: 32))!
            .seal(SharedTokenEntry(value: "forged", issuedAtWall: Date().timeIntervalSince1970, lifetime: .seconds(3600)),
                  cacheKey: binding.hash)!
        onLoop { store.put(binding.entryKey, foreign) }
        let credential = try replicas(1, store: store)[0]
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        XCTAssertEqual(credential.currentToken()?.value, "tok-1")
        XCTAssertEqual(credential.status.sharedCache?.counts.corrupt, 2, "the read and the re-read under the lease")
        XCTAssertTrue(logs.text.contains("does not open"))
    }

    func testStoreFailureAtEveryStepStillGivesEachReplicaAToken() throws {
        for failing in ["read", "lease", "write", "delete", "all"] {
            try server.setControl(["expires_in": 3600])
            let store = makeStore()
            onLoop { store.failing = [failing] }
            let fleet = try replicas(2, store: store)
            for credential in fleet { credential.start() }
            XCTAssertTrue(eventually { fleet.allSatisfy { $0.currentToken() != nil } }, failing)
            for credential in fleet { credential.stop() }
        }
        XCTAssertTrue(logs.text.contains("shared token cache unavailable"))
    }

    func testRejectedSharedTokenIsReplacedOnceForAllReplicas() throws {
        let store = makeStore()
        let fleet = try replicas(3, store: store)
        for credential in fleet { credential.start() }
        XCTAssertTrue(eventually { fleet.allSatisfy { $0.currentToken() != nil } })
        let rejected = try XCTUnwrap(fleet[0].currentToken())
        let caller = try LoopHarness()
        defer { caller.stop() }
        let answers = Locked<[String?]>([])
        let done = expectation(description: "replays")
        done.expectedFulfillmentCount = 3
        caller.loop.execute {
            for credential in fleet {
                credential.rejected(rejected, on: caller.loop, timeout: .seconds(5)) { token in
                    answers.update { $0.append(token?.value) }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 15)
        XCTAssertEqual(Set(answers.value), ["tok-2"], "every replica replays with the one new token")
        XCTAssertEqual(server.requests.count, 2, "one refetch for the fleet")
    }
}

extension SharedTokenDriverTests {
    /// A drain asks ``ManagedCredential/rotationPending`` before it stops the process: true from
    /// the moment a refresh is sent until the rotated refresh token is in the file and the entry
    /// carrying it is in the fleet's store — stopping in between would lose the only copy.
    func testARotationIsPendingUntilTheNewRefreshTokenIsSharedWithTheFleet() throws {
        try server.setControl(["delay": 0.5, "body": #"{"access_token":"tok-r","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rotation-\(UUID().uuidString).refresh").path
        try "rt-1".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = RefreshTokenFile(path: path)
        let request = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token", clientId: "client", secret: "s3cr3t")
        var source = TokenRequestSource.fixed(request)
        source.refreshTokens = file
        let store = makeStore()
        let cache = SharedTokenCache(store: store, sealer: TokenSealer(key: key)!, keyPrefix: "t:", instanceId: "replica-0",
                                     pollInterval: .milliseconds(20))
        let credential = ManagedCredential(name: "api", source: source, loop: tokenLoop.loop, logger: logs.logger,
                                           shared: cache.binding(material: "oauth2|client"))
        credentials.append(credential)
        XCTAssertFalse(credential.rotationPending, "nothing sent yet")
        credential.start()
        XCTAssertTrue(eventually { credential.rotationPending }, "pending once the refresh is sent")
        XCTAssertNil(credential.currentToken())
        XCTAssertTrue(eventually { !credential.rotationPending }, "settled after the answer")
        XCTAssertEqual(credential.currentToken()?.value, "tok-r")
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), "rt-2")
        let binding = cache.binding(material: "oauth2|client")
        let entryKey = binding.entryKey
        let (entry, until) = onLoop { (store.values[entryKey]?.value, store.values[entryKey]?.until) }
        // A replica started after the whole fleet stopped must still find it (30 days), though
        // the access token in it expires in an hour.
        XCTAssertGreaterThan(try XCTUnwrap(until), ContinuousClock.now + .seconds(29 * 24 * 3600))
        let opened = try XCTUnwrap(entry.flatMap { TokenSealer(key: key)!.open($0, cacheKey: binding.hash) }, "the entry is in the store")
        XCTAssertEqual(opened.refreshToken, "rt-2", "the fleet's entry carries the rotated refresh token")
    }

    /// A credential that rotates nothing is never pending, whatever it fetches.
    func testAClientCredentialsFetchIsNeverARotation() throws {
        try server.setControl(["delay": 0.3])
        let store = makeStore()
        let fleet = try replicas(1, store: store)
        fleet[0].start()
        let sawPending = Locked(false)
        XCTAssertTrue(eventually {
            if fleet[0].rotationPending { sawPending.update { $0 = true } }
            return fleet[0].currentToken() != nil
        })
        XCTAssertFalse(sawPending.value)
    }
}
