import EventLoop
import Foundation
import TokenManager
import XCTest
import TestSupport

final class ManagedCredentialTests: XCTestCase {
    private var server: TokenServerFixture!
    private var tokenLoop: LoopHarness!
    private var callerLoop: LoopHarness!
    private let logs = LogRecorder()
    private var credentials: [ManagedCredential] = []

    override func setUpWithError() throws {
        server = try TokenServerFixture()
        tokenLoop = try LoopHarness()
        callerLoop = try LoopHarness()
    }

    override func tearDown() {
        for credential in credentials { credential.stop() }
        callerLoop?.stop()
        tokenLoop?.stop()
        server?.stop()
    }

    private let fastBackoff = TokenRefreshSettings(backoff: Backoff(base: .milliseconds(50), cap: .milliseconds(200)))

    private func makeCredential(settings: TokenRefreshSettings? = nil) throws -> ManagedCredential {
        let request = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token", clientId: "client",
                                                      secret: "very-secret-value")
        let credential = ManagedCredential(name: "api", request: request, settings: settings ?? fastBackoff,
                                           loop: tokenLoop.loop, logger: logs.logger, random: SplitMix64(seed: 9))
        credentials.append(credential)
        return credential
    }

    /// Starts `count` waits on the caller loop; returns the tokens (nil for timeouts) once all completed.
    private func wait(for credential: ManagedCredential, count: Int, timeout: Duration) -> [AccessToken?] {
        let results = Locked<[AccessToken?]>([])
        let offLoop = Locked(0)
        let done = expectation(description: "all waiters completed")
        done.expectedFulfillmentCount = count
        let caller = callerLoop!
        caller.loop.execute {
            for _ in 0..<count {
                credential.waitForToken(on: caller.loop, timeout: timeout) { token in
                    if !caller.isCurrent { offLoop.update { $0 += 1 } }
                    results.update { $0.append(token) }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 20)
        XCTAssertEqual(offLoop.value, 0, "completions run on the caller's loop")
        return results.value
    }

    func testStartFetchesAndLogsWithoutSecrets() throws {
        try server.setControl(["expires_in": 3600])
        let credential = try makeCredential()
        XCTAssertNil(credential.currentToken())
        XCTAssertEqual(credential.status.phase, .idle)
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        let token = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(token.value, "tok-1")
        let status = credential.status
        XCTAssertEqual(status.phase, .valid)
        XCTAssertEqual(status.fingerprint, token.fingerprint)
        XCTAssertEqual(status.counts.succeeded, 1)
        XCTAssertNotNil(status.nextFetchAt)
        XCTAssertTrue(logs.text.contains("token fetched"))
        XCTAssertTrue(logs.text.contains(token.fingerprint))
        XCTAssertFalse(logs.text.contains("tok-1"))
        XCTAssertFalse(logs.text.contains("very-secret-value"))
        XCTAssertEqual(server.requests.count, 1)
    }

    func testASourceThatCannotMakeARequestFailsTheFetchWithoutSendingAndRecovers() throws {
        try server.setControl(["expires_in": 3600])
        let failing = Locked(true)
        let good = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token", clientId: "client", secret: "s")
        let source = TokenRequestSource { () throws(TokenFetchError) in
            if failing.value { throw TokenFetchError(.clientAuthentication("assertionFile /var/run/token: is empty")) }
            return good
        }
        let credential = ManagedCredential(name: "api", source: source, settings: fastBackoff, loop: tokenLoop.loop,
                                           logger: logs.logger, random: SplitMix64(seed: 9))
        credentials.append(credential)
        credential.start()
        XCTAssertTrue(eventually { credential.status.lastError != nil })
        XCTAssertEqual(credential.status.lastError,
                       "cannot authenticate to the token endpoint: assertionFile /var/run/token: is empty")
        XCTAssertGreaterThanOrEqual(credential.status.counts.failed["client_authentication"] ?? 0, 1)
        XCTAssertEqual(server.requests.count, 0, "nothing is sent")
        XCTAssertTrue(logs.text.contains("assertionFile /var/run/token: is empty"))
        failing.update { $0 = false }
        XCTAssertTrue(eventually { credential.currentToken() != nil }, "the backoff retry asks the source again")
        XCTAssertEqual(server.requests.count, 1)
    }

    func testServerErrorThenRecovery() throws {
        try server.setControl(["status": 500])
        let credential = try makeCredential()
        credential.start()
        XCTAssertTrue(eventually { credential.status.counts.failed["http_5xx", default: 0] >= 2 })
        XCTAssertNil(credential.currentToken())
        XCTAssertEqual(credential.status.phase == .failing || credential.status.phase == .fetching, true)
        XCTAssertEqual(credential.status.lastError?.hasPrefix("token endpoint answered HTTP 500"), true)
        XCTAssertTrue(logs.text.contains("warning token fetch failed"))
        try server.setControl(["status": 200])
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        XCTAssertEqual(credential.status.consecutiveFailures, 0)
        XCTAssertNil(credential.status.lastError)
        XCTAssertGreaterThanOrEqual(server.requests.count, 3)
    }

    func testRejectedCredentialsLogAnError() throws {
        try server.setControl(["status": 401, "error": "invalid_client", "error_description": "bad secret"])
        let credential = try makeCredential()
        credential.start()
        XCTAssertTrue(eventually { credential.status.counts.failed["credentials_rejected"] == 1 })
        XCTAssertTrue(eventually { self.logs.text.contains("error token fetch failed: the token endpoint rejected the credentials") })
        XCTAssertTrue(logs.text.contains("invalid_client: bad secret"))
        // Retried at the cap, not at once.
        usleep(100_000)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testSingleFlightUnder200ConcurrentWaiters() throws {
        try server.setControl(["delay": 0.3, "framing": "chunked"])
        let credential = try makeCredential()
        let tokens = wait(for: credential, count: 200, timeout: .seconds(10))
        XCTAssertEqual(tokens.count, 200)
        XCTAssertTrue(tokens.allSatisfy { $0?.value == "tok-1" })
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(credential.status.counts.started, 1)
    }

    func testWaitTimesOutWithNilWhenTheServerHangs() throws {
        try server.setControl(["delay": 10])
        let credential = try makeCredential()
        credential.start()
        let started = ContinuousClock.now
        let tokens = wait(for: credential, count: 5, timeout: .milliseconds(300))
        XCTAssertEqual(tokens.count, 5)
        XCTAssertTrue(tokens.allSatisfy { $0 == nil })
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        XCTAssertEqual(credential.status.phase, .fetching)
    }

    /// Reports `token` as rejected `count` times from the caller loop; returns each answer.
    private func reject(_ token: AccessToken, by credential: ManagedCredential, count: Int = 1) -> [AccessToken?] {
        let results = Locked<[AccessToken?]>([])
        let done = expectation(description: "every rejection answered")
        done.expectedFulfillmentCount = count
        let caller = callerLoop!
        caller.loop.execute {
            for _ in 0..<count {
                credential.rejected(token, on: caller.loop, timeout: .seconds(5)) { answer in
                    results.update { $0.append(answer) }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 20)
        return results.value
    }

    func testFiftyRejectionsCauseOneRefetchAndHoldersGetTheNewToken() throws {
        let credential = try makeCredential()
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        let first = try XCTUnwrap(credential.currentToken())
        let answers = reject(first, by: credential, count: 50)
        XCTAssertEqual(credential.currentToken()?.value, "tok-2")
        XCTAssertEqual(answers.map { $0?.value }, Array(repeating: "tok-2", count: 50), "every holder replays with the new token")
        usleep(200_000)
        XCTAssertEqual(server.requests.count, 2)
        // A report about the old token now: the newer token at once, no fetch.
        XCTAssertEqual(reject(first, by: credential).map { $0?.value }, ["tok-2"])
        // The new token rejected before any request succeeded with it: passed through, and it
        // stays in use until the refetch that waits 1 s (the backoff) replaces it.
        let second = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(reject(second, by: credential), [nil])
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(credential.currentToken(), second)
        XCTAssertTrue(eventually { credential.currentToken()?.value == "tok-3" })
        XCTAssertEqual(server.requests.count, 3)
    }

    func testASuccessReportedFromAWorkerMakesTheNext401RefetchAtOnce() throws {
        let settings = TokenRefreshSettings(backoff: fastBackoff.backoff, unauthorizedRefetchInterval: .milliseconds(300))
        let credential = try makeCredential(settings: settings)
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        let first = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(reject(first, by: credential).map { $0?.value }, ["tok-2"], "the first 401 refetches at once")
        // tok-2 rejected before any success: its refetch waits (300 ms here), the 401 is passed on.
        let second = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(reject(second, by: credential), [nil])
        XCTAssertTrue(eventually { credential.currentToken()?.value == "tok-3" })
        let third = try XCTUnwrap(credential.currentToken())
        // A request on another thread succeeded with tok-3 (reported many times, as workers do).
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<1000 { credential.accepted(third) }
        }
        credential.accepted(first)
        // tok-3 is revoked: replaced at once, and the request holding its 401 replays with the new token.
        XCTAssertEqual(reject(third, by: credential).map { $0?.value }, ["tok-4"])
        XCTAssertEqual(server.requests.count, 4)
        XCTAssertEqual(credential.status.counts.unauthorizedRefetches, 3)
    }

    func testShortTokenIsRefreshedAheadOfExpiryWithoutAGap() throws {
        try server.setControl(["expires_in": 2])
        let credential = try makeCredential()
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        var values = Set<String>()
        var gaps = 0
        let deadline = ContinuousClock.now + .milliseconds(2500)
        while ContinuousClock.now < deadline {
            if let token = credential.currentToken() { values.insert(token.value) } else { gaps += 1 }
            usleep(5_000)
        }
        XCTAssertEqual(gaps, 0, "requests never wait for a refresh")
        XCTAssertGreaterThanOrEqual(values.count, 2)
    }

    func testCachedTokenIsAdoptedByANewCredential() throws {
        let request = try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/t", clientId: "c", secret: "s")
        let loop = tokenLoop.loop
        let made = Locked<[ManagedCredential]>([])
        let logger = logs.logger
        let done = expectation(description: "created")
        loop.execute {
            let cache = TokenCache(capacity: 4)
            let a = ManagedCredential(name: "x", request: request, loop: loop, logger: logger, cache: cache)
            let b = ManagedCredential(name: "x", request: request, loop: loop, logger: logger, cache: cache)
            made.update { $0 = [a, b] }
            done.fulfill()
        }
        wait(for: [done], timeout: 5)
        let (a, b) = (made.value[0], made.value[1])
        credentials += [a, b]
        a.start()
        XCTAssertTrue(eventually { a.currentToken() != nil })
        b.start()
        XCTAssertTrue(eventually { b.currentToken() != nil })
        XCTAssertEqual(b.currentToken(), a.currentToken())
        XCTAssertEqual(server.requests.count, 1)
    }

    func testOneShotFetch() throws {
        let loop = tokenLoop.loop
        let good = try TokenEndpointRequest.mca(serverURL: server.baseURL, tenantId: "t", clientId: "c", secret: "s")
        let results = Locked<[Result<AccessToken, TokenFetchError>]>([])
        let first = expectation(description: "first")
        loop.execute {
            TokenFetch.once(good, on: loop) { result in
                results.update { $0.append(result) }
                first.fulfill()
            }
        }
        wait(for: [first], timeout: 15)
        XCTAssertEqual(try results.value.first?.get().value, "tok-1")

        try server.setControl(["status": 400, "error": "invalid_client", "error_description": "Client authentication failed"])
        let second = expectation(description: "second")
        loop.execute {
            TokenFetch.once(good, on: loop) { result in
                results.update { $0.append(result) }
                second.fulfill()
            }
        }
        wait(for: [second], timeout: 15)
        guard case .failure(let error)? = results.value.last else { return XCTFail() }
        XCTAssertEqual(error.description, "token endpoint answered HTTP 400 invalid_client: Client authentication failed")
    }

    func testABearerAnswerToADPoPRequestIsUsedAsBearerWithAWarning() throws {
        try server.setControl(["expires_in": 3600])
        var source = TokenRequestSource.fixed(try TokenEndpointRequest.oauth2(tokenURL: server.baseURL + "/oauth/token",
                                                                              clientId: "client", secret: "very-secret-value"))
        let key = try DPoPKey.generated()
        source.dpop = DPoPKeySource(key: key)
        let credential = ManagedCredential(name: "api", source: source, settings: fastBackoff, loop: tokenLoop.loop,
                                           logger: logs.logger, random: SplitMix64(seed: 9))
        credentials.append(credential)
        credential.start()
        XCTAssertTrue(eventually { credential.currentToken() != nil })
        let token = try XCTUnwrap(credential.currentToken())
        XCTAssertEqual(token.scheme, "Bearer", "the server did not bind it: presented as it was issued")
        XCTAssertNil(token.binding?.dpopKey)
        XCTAssertEqual(String(decoding: token.headerLine, as: UTF8.self), "Authorization: Bearer tok-1\r\n")
        XCTAssertTrue(logs.text.contains("answered a DPoP request with a bearer token"), logs.text)
        XCTAssertFalse(logs.text.contains("tok-1"))
        XCTAssertNotNil(server.requests.first?.header("DPoP"), "the request carried a proof")
    }
}
