import TestSupport
import TokenManager
import XCTest

/// The on-demand lifecycle (``TokenRefreshSettings/refreshAhead`` false) that tokens exchanged
/// for one caller use: fetched when a request needs one, never ahead of time for nobody; a
/// failure answers the waiting requests at once and blocks new fetches for its backoff.
final class TokenRefreshStateOnDemandTests: XCTestCase {
    private let t0 = ContinuousClock.now
    private let transient = TokenFetchError(.httpStatus(503))

    private func makeState(refreshAhead: Bool = false) -> TokenRefreshState {
        TokenRefreshState(settings: TokenRefreshSettings(refreshAhead: refreshAhead), random: SplitMix64(seed: 7))
    }

    private func grant(_ value: String, _ lifetime: Duration) -> TokenGrant {
        TokenGrant(value: value, lifetime: lifetime, lifetimeSource: .expiresIn)
    }

    private func schedules(_ actions: [TokenRefreshAction]) -> Bool {
        actions.contains { if case .schedule = $0 { return true } else { return false } }
    }

    func testAFetchedTokenIsNotRefreshedAheadAndTheNextNeedFetchesOnce() throws {
        var state = makeState()
        XCTAssertEqual(state.addWaiter(now: t0).actions, [.fetch], "the first request starts the credential")
        let actions = state.fetchSucceeded(grant("one", .seconds(100)), now: t0)
        XCTAssertFalse(schedules(actions), "no refresh ahead of expiry: \(actions)")
        XCTAssertTrue(actions.contains(.resumeWaiters(try XCTUnwrap(state.usableToken(at: t0)))))
        XCTAssertNil(state.nextFetchAt)
        XCTAssertEqual(state.addWaiter(now: t0 + .seconds(50)).token?.value, "one", "a usable token is handed out")

        let later = t0 + .seconds(95)  // past usable-until (expiry minus a tenth)
        XCTAssertNil(state.usableToken(at: later))
        XCTAssertEqual(state.addWaiter(now: later).actions, [.fetch], "a request that needs a token fetches one")
        XCTAssertEqual(state.addWaiter(now: later).actions, [], "single flight: the next one waits for it")
        XCTAssertEqual(state.waiterCount, 2)
        _ = state.fetchSucceeded(grant("two", .seconds(100)), now: later)
        XCTAssertEqual(state.waiterCount, 0)
        XCTAssertEqual(state.counts.started, 2)
    }

    func testAFailureAnswersTheWaitersAtOnceAndBacksOffNewFetches() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.addWaiter(now: t0)
        let failed = state.fetchFailed(transient, now: t0)
        XCTAssertTrue(failed.contains(.failWaiters), "waiting requests get their answer now: \(failed)")
        XCTAssertFalse(schedules(failed), "no retry for nobody")
        XCTAssertEqual(state.waiterCount, 0)
        let notBefore = try XCTUnwrap(state.retryNotBefore)
        XCTAssertGreaterThan(notBefore, t0)

        let (token, during) = state.addWaiter(now: t0)
        XCTAssertNil(token)
        XCTAssertEqual(during, [.failWaiters], "within the backoff: answered at once, nothing fetched")
        XCTAssertEqual(state.counts.started, 1)
        XCTAssertEqual(state.addWaiter(now: notBefore).actions, [.fetch], "after the backoff a request fetches again")
        _ = state.fetchSucceeded(grant("ok", .seconds(100)), now: notBefore)
        XCTAssertNil(state.retryNotBefore, "a success ends the backoff")
    }

    func testARefusalCarriesItsCode() {
        let refused = TokenFetchError(.oauthError(status: 400, code: "invalid_grant", description: nil))
        XCTAssertEqual(refused.refusalCode, "invalid_grant")
        XCTAssertEqual(TokenFetchError(.oauthError(status: 400, code: "invalid_target", description: nil)).refusalCode, "invalid_target")
        XCTAssertNil(TokenFetchError(.oauthError(status: 401, code: "invalid_client", description: nil)).refusalCode,
                     "the sidecar's own credentials being wrong is not the caller's fault")
        XCTAssertNil(transient.refusalCode)
        XCTAssertTrue(TokenFetchError.exchangeRefusalCodes.contains("invalid_request"), "RFC 8693 §2.2.2: an unacceptable subject")
        let quoted = TokenFetchError(.oauthError(status: 400, code: "invalid_request", description: "bad token eyJhbGciOi"))
        XCTAssertFalse(quoted.withoutDescription.description.contains("eyJ"))
        XCTAssertTrue(quoted.withoutDescription.description.contains("invalid_request"))
    }

    func testABackend401StillRefetchesOnce() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.fetchSucceeded(grant("one", .seconds(100)), now: t0)
        let token = try XCTUnwrap(state.usableToken(at: t0))
        let (outcome, actions) = state.rejected(token, now: t0 + .seconds(1), waiting: true)
        XCTAssertEqual(outcome, .awaitRefetch)
        XCTAssertEqual(actions, [.evict, .fetch])
        XCTAssertEqual(state.rejected(token, now: t0 + .seconds(1), waiting: true).actions, [], "once, however many report it")
    }

    func testARejectedTokenWhoseReplacementFailedIsWithdrawn() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.fetchSucceeded(grant("one", .seconds(3600)), now: t0)
        let token = try XCTUnwrap(state.usableToken(at: t0))
        _ = state.rejected(token, now: t0 + .seconds(1), waiting: false)
        let failed = state.fetchFailed(transient, now: t0 + .seconds(1))
        XCTAssertTrue(failed.contains(.publish(nil)), "the refused token is not handed out for the rest of its life: \(failed)")
        XCTAssertNil(state.usableToken(at: t0 + .seconds(2)))
        let notBefore = try XCTUnwrap(state.retryNotBefore)
        XCTAssertEqual(state.addWaiter(now: t0 + .seconds(1)).actions, [.failWaiters], "503 during the backoff")
        XCTAssertEqual(state.addWaiter(now: notBefore).actions, [.fetch], "then a fresh fetch")
    }

    func testARefusalAnswersWaitersAtOnceEvenWhenRefreshingAhead() {
        var state = makeState(refreshAhead: true)
        _ = state.addWaiter(now: t0)
        let refused = TokenFetchError(.oauthError(status: 400, code: "invalid_scope", description: nil))
        XCTAssertTrue(state.fetchFailed(refused, now: t0, answerWaiters: true).contains(.failWaiters))
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testRefreshAheadStaysTheDefault() {
        var state = makeState(refreshAhead: true)
        _ = state.start(now: t0)
        XCTAssertTrue(schedules(state.fetchSucceeded(grant("one", .seconds(100)), now: t0)))
        _ = state.timerFired(now: t0 + .seconds(80))
        XCTAssertTrue(schedules(state.fetchFailed(transient, now: t0 + .seconds(80))), "a failure retries on its own")
    }

    func testStartFetchesAndASuccessIsPublishedWithNothingScheduled() throws {
        var state = makeState()
        XCTAssertEqual(state.start(now: t0), [.fetch])
        XCTAssertEqual(state.phase(at: t0), .fetching)
        let actions = state.fetchSucceeded(grant("one", .seconds(600)), now: t0 + .seconds(1))
        let token = try XCTUnwrap(state.usableToken(at: t0 + .seconds(1)))
        XCTAssertEqual(token.value, "one")
        XCTAssertTrue(actions.contains(.publish(token)), "requests find it without waiting: \(actions)")
        XCTAssertFalse(schedules(actions), "\(actions)")
        XCTAssertFalse(actions.contains(.fetch))
        XCTAssertEqual(state.phase(at: t0 + .seconds(1)), .valid)
        XCTAssertEqual(state.timerFired(now: t0 + .seconds(500)), [], "no timer, nothing to do")
        XCTAssertEqual(state.counts.started, 1, "nothing fetched until a request needs it")
    }

    func testACachedTokenIsUsedAndNotRefreshedAhead() {
        var state = makeState()
        let cached = IssuedToken(value: "cached", issuedAt: t0, lifetime: .seconds(600))
        let actions = state.start(now: t0 + .seconds(10), cached: cached)
        XCTAssertEqual(actions.count, 1)
        XCTAssertEqual(state.usableToken(at: t0 + .seconds(10))?.value, "cached")
        XCTAssertFalse(schedules(actions))
        XCTAssertEqual(state.addWaiter(now: t0 + .seconds(600)).actions, [.fetch], "once it expired, the next request fetches")
    }

    func testAFailureWithNobodyWaitingAnswersNobodyAndRetriesForTheNextRequest() throws {
        var state = makeState()
        _ = state.start(now: t0)
        let failed = state.fetchFailed(transient, now: t0)
        XCTAssertFalse(failed.contains(.failWaiters), "\(failed)")
        XCTAssertFalse(schedules(failed), "\(failed)")
        XCTAssertFalse(failed.contains(.fetch))
        XCTAssertEqual(state.phase(at: t0), .failing)
        let notBefore = try XCTUnwrap(state.retryNotBefore)
        XCTAssertEqual(state.timerFired(now: notBefore + .seconds(1)), [], "no retry for nobody")
        XCTAssertEqual(state.addWaiter(now: notBefore + .seconds(1)).actions, [.fetch])
        XCTAssertEqual(state.addWaiter(now: notBefore + .seconds(1)).actions, [], "single flight after a backoff too")
        XCTAssertEqual(state.counts.started, 2)
    }

    func testEveryRequestWaitingOnAFailedFetchIsAnsweredAndTheFailuresAreCounted() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        XCTAssertEqual(state.fetchFailed(transient, now: t0), [.failWaiters])
        let first = try XCTUnwrap(state.retryNotBefore)
        XCTAssertEqual(state.addWaiter(now: first).actions, [.fetch])
        XCTAssertEqual(state.addWaiter(now: first).actions, [], "joins the fetch")
        XCTAssertEqual(state.fetchFailed(transient, now: first), [.failWaiters], "both get their answer")
        XCTAssertEqual(state.waiterCount, 0)
        XCTAssertEqual(state.consecutiveFailures, 2)
        XCTAssertNotNil(state.lastError)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(state.retryNotBefore), first, "a new backoff from the second failure")
    }

    func testAWaiterThatGaveUpIsNotAnsweredAgain() {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        state.removeWaiter()
        XCTAssertEqual(state.fetchFailed(transient, now: t0 + .seconds(5)), [], "the timed-out request was answered already")
    }

    func testATokenThatArrivesAlreadyOverAnswersTheWaitersAtOnce() {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.addWaiter(now: t0)
        // 10 s lifetime counted from the fetch's start: usable until t0 + 9 s, answered at t0 + 9.5 s.
        let actions = state.fetchSucceeded(grant("late", .seconds(10)), now: t0 + .milliseconds(9500))
        XCTAssertTrue(actions.contains(.failWaiters), "nobody waits for a token that is already over: \(actions)")
        XCTAssertFalse(actions.contains { if case .resumeWaiters = $0 { return true } else { return false } })
        XCTAssertTrue(actions.contains(.publish(nil)))
        XCTAssertFalse(schedules(actions))
        XCTAssertEqual(state.waiterCount, 0)
        XCTAssertEqual(state.addWaiter(now: t0 + .seconds(10)).actions, [.fetch], "the next request tries again")
    }

    func testAFailedRefetchAfterA401AnswersTheHoldersAndWithdrawsTheRefusedToken() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.fetchSucceeded(grant("one", .seconds(600)), now: t0)
        let one = try XCTUnwrap(state.usableToken(at: t0))
        XCTAssertEqual(state.rejected(one, now: t0 + .seconds(1), waiting: true).outcome, .awaitRefetch)
        XCTAssertEqual(state.rejected(one, now: t0 + .seconds(1), waiting: true).outcome, .awaitRefetch, "joins the refetch")
        let failed = state.fetchFailed(transient, now: t0 + .seconds(2))
        XCTAssertEqual(failed, [.resumeRejected(nil), .publish(nil)], "the 401s are passed on, the refused token withdrawn, nothing scheduled")
        XCTAssertEqual(state.rejectionWaiterCount, 0)
        let notBefore = try XCTUnwrap(state.retryNotBefore)
        XCTAssertNil(state.usableToken(at: t0 + .seconds(3)), "a token the backend refused is not handed out for the rest of its life")
        XCTAssertEqual(state.addWaiter(now: max(notBefore, t0 + .seconds(3))).actions, [.fetch], "after the backoff a request fetches anew")
    }

    func testA401ToAnOldTokenReplaysWithTheNewOne() throws {
        var state = makeState()
        _ = state.addWaiter(now: t0)
        _ = state.fetchSucceeded(grant("one", .seconds(600)), now: t0)
        let one = try XCTUnwrap(state.usableToken(at: t0))
        XCTAssertEqual(state.rejected(one, now: t0 + .seconds(1), waiting: true).actions, [.evict, .fetch])
        let refetched = state.fetchSucceeded(grant("two", .seconds(600)), now: t0 + .seconds(1))
        let two = try XCTUnwrap(state.usableToken(at: t0 + .seconds(1)))
        XCTAssertEqual(two.value, "two")
        XCTAssertTrue(refetched.contains(.resumeRejected(two)))
        XCTAssertFalse(schedules(refetched), "a refetch on demand is not refreshed ahead either")
        XCTAssertEqual(state.rejected(one, now: t0 + .seconds(2), waiting: true).outcome, .replay(two))
    }

    func testASubjectsExpiryCutsTheGrant() {
        let long = grant("x", .seconds(3600))
        XCTAssertEqual(try long.limited(to: 60).get().lifetime, .seconds(60))
        XCTAssertEqual(try long.limited(to: 60).get().lifetimeSource, .subjectExpiry)
        XCTAssertEqual(try long.limited(to: 7200).get(), long, "a shorter token keeps its own lifetime")
        guard case .failure(let error) = long.limited(to: 0) else { return XCTFail("an expired subject yields no token") }
        XCTAssertEqual(error.refusalCode, "invalid_grant")
    }
}
