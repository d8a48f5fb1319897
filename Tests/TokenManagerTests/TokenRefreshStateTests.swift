import TokenManager
import XCTest
import TestSupport

final class TokenRefreshStateTests: XCTestCase {
    private let t0 = ContinuousClock.now

    private func makeState(seed: UInt64 = 1, settings: TokenRefreshSettings = TokenRefreshSettings()) -> TokenRefreshState {
        TokenRefreshState(settings: settings, random: SplitMix64(seed: seed))
    }

    private func grant(_ value: String, _ lifetime: Duration) -> TokenGrant {
        TokenGrant(value: value, lifetime: lifetime, lifetimeSource: .expiresIn)
    }

    private func scheduled(_ actions: [TokenRefreshAction]) -> ContinuousClock.Instant? {
        for case .schedule(let at) in actions { return at }
        return nil
    }

    private let transient = TokenFetchError(.httpStatus(503))

    func testFreshStartFetchesThenRefreshesAtEightyPercentWithJitter() throws {
        var state = makeState()
        XCTAssertEqual(state.phase(at: t0), .idle)
        XCTAssertEqual(state.start(now: t0), [.fetch])
        XCTAssertEqual(state.start(now: t0), [], "start is idempotent")
        XCTAssertEqual(state.phase(at: t0), .fetching)

        let arrived = t0 + .milliseconds(200)
        let actions = state.fetchSucceeded(grant("one", .seconds(1000)), now: arrived)
        let token = try XCTUnwrap(state.usableToken(at: arrived))
        XCTAssertEqual(token.value, "one")
        XCTAssertEqual(actions.first, .publish(token))
        // Lifetime counts from the fetch start; usable until expiry - 10 s.
        XCTAssertEqual(state.current?.expiresAt, t0 + .seconds(1000))
        XCTAssertEqual(token.expiresAt, t0 + .seconds(990))
        let refresh = try XCTUnwrap(scheduled(actions))
        XCTAssertGreaterThanOrEqual(refresh, t0 + .seconds(780))
        XCTAssertLessThanOrEqual(refresh, t0 + .seconds(820))
        XCTAssertEqual(state.phase(at: arrived), .valid)

        // Requests keep the current token while the refresh is in flight.
        XCTAssertEqual(state.timerFired(now: refresh), [.fetch])
        XCTAssertEqual(state.phase(at: refresh), .refreshing)
        XCTAssertEqual(state.usableToken(at: refresh)?.value, "one")
        _ = state.fetchSucceeded(grant("two", .seconds(1000)), now: refresh + .milliseconds(10))
        XCTAssertEqual(state.usableToken(at: refresh + .milliseconds(10))?.value, "two")
        XCTAssertEqual(state.counts.started, 2)
        XCTAssertEqual(state.counts.succeeded, 2)
    }

    /// A fetch that waited (a fleet's flight waiting for another replica's lease) before its
    /// request was sent: the token's lifetime counts from the request, not from the wait.
    func testAFetchSentAfterAWaitIsDatedFromTheRequest() throws {
        var state = makeState()
        XCTAssertEqual(state.start(now: t0), [.fetch])
        let sent = t0 + .seconds(11)
        let arrived = sent + .milliseconds(100)
        let actions = state.fetchSucceeded(grant("late", .seconds(4)), now: arrived, sentAt: sent)
        XCTAssertEqual(state.current?.issuedAt, sent)
        XCTAssertEqual(state.usableToken(at: arrived)?.value, "late", "usable for 3.6 s from the request")
        XCTAssertEqual(actions.first, .publish(try XCTUnwrap(state.usableToken(at: arrived))))
    }

    func testJitterVariesWithTheSeedButStaysWithinTwoPercent() {
        var times = Set<ContinuousClock.Instant>()
        for seed in 1...20 {
            var state = makeState(seed: UInt64(seed))
            _ = state.start(now: t0)
            guard let at = scheduled(state.fetchSucceeded(grant("x", .seconds(1000)), now: t0)) else { return XCTFail() }
            XCTAssertTrue(at >= t0 + .seconds(780) && at <= t0 + .seconds(820))
            times.insert(at)
        }
        XCTAssertGreaterThan(times.count, 15)
    }

    func testFourSecondTokenIsUsableForThreePointSixSeconds() {
        var state = makeState()
        _ = state.start(now: t0)
        let actions = state.fetchSucceeded(grant("short", .seconds(4)), now: t0)
        XCTAssertNotNil(state.usableToken(at: t0 + .milliseconds(3599)))
        XCTAssertNil(state.usableToken(at: t0 + .milliseconds(3600)))
        let refresh = scheduled(actions)!
        XCTAssertTrue(refresh >= t0 + .milliseconds(3120) && refresh <= t0 + .milliseconds(3280))
    }

    func testRefreshNeverLaterThanUsableUntil() {
        var state = makeState(settings: TokenRefreshSettings(refreshAt: 1.0))
        _ = state.start(now: t0)
        let refresh = scheduled(state.fetchSucceeded(grant("x", .seconds(50)), now: t0))!
        XCTAssertLessThanOrEqual(refresh, t0 + .seconds(45))
    }

    func testFailuresBackOffWithGrowingCeilingsUntilTheCapAndNeverGiveUp() {
        var state = makeState(seed: 3)
        var now = t0
        _ = state.start(now: now)
        var delays: [Duration] = []
        for _ in 0..<40 {
            let actions = state.fetchFailed(transient, now: now)
            guard let at = scheduled(actions) else { return XCTFail("no retry scheduled") }
            delays.append(at - now)
            now = at
            XCTAssertEqual(state.timerFired(now: now), [.fetch], "never gives up")
        }
        let backoff = Backoff()
        for (attempt, delay) in delays.enumerated() {
            XCTAssertLessThanOrEqual(delay, backoff.ceiling(attempt: attempt), "attempt \(attempt)")
            XCTAssertGreaterThanOrEqual(delay, .zero)
        }
        XCTAssertTrue(delays[20...].contains { $0 > .seconds(30) }, "late attempts use the 60 s cap")
        XCTAssertTrue(delays[20...].allSatisfy { $0 <= .seconds(60) })
        XCTAssertEqual(state.consecutiveFailures, 40)
        XCTAssertEqual(state.counts.failed["http_5xx"], 40)
        XCTAssertEqual(state.phase(at: now), .fetching)

        _ = state.fetchSucceeded(grant("ok", .seconds(100)), now: now)
        XCTAssertEqual(state.consecutiveFailures, 0)
        XCTAssertNil(state.lastError)
    }

    func testRetryAfterIsHonouredAndCapped() {
        var state = makeState()
        _ = state.start(now: t0)
        XCTAssertEqual(scheduled(state.fetchFailed(TokenFetchError(.httpStatus(429), retryAfter: .seconds(42)), now: t0)),
                       t0 + .seconds(42))
        _ = state.timerFired(now: t0)
        XCTAssertEqual(scheduled(state.fetchFailed(TokenFetchError(.httpStatus(503), retryAfter: .seconds(86_400)), now: t0)),
                       t0 + .seconds(600))
    }

    func testCredentialsRejectedRetriesAtTheCap() {
        var state = makeState()
        _ = state.start(now: t0)
        let rejected = TokenFetchError(.oauthError(status: 401, code: "invalid_client", description: nil))
        var now = t0
        for _ in 0..<3 {
            XCTAssertEqual(scheduled(state.fetchFailed(rejected, now: now)), now + .seconds(60))
            now += .seconds(60)
            XCTAssertEqual(state.timerFired(now: now), [.fetch])
        }
        XCTAssertEqual(state.counts.failed["credentials_rejected"], 3)
    }

    /// A revoked refresh token (`invalid_grant` at 400, marked refused): requests keep arriving
    /// every 100 ms for a minute and each waits for a token, yet the server is asked at most
    /// twice (the refusal, then once at the backoff cap): never a storm (the bound is
    /// 10 token requests in 60 s).
    func testARefusedRefreshTokenIsAskedAgainOnlyAtTheCapWhateverTheLoad() {
        var state = makeState()
        var fetches = state.start(now: t0).filter { $0 == .fetch }.count
        _ = state.fetchSucceeded(grant("last", .seconds(2)), now: t0)
        var refused = TokenFetchError(.oauthError(status: 400, code: "invalid_grant", description: nil))
        refused.grantRefused = true
        var now = t0 + .seconds(2)
        fetches += state.timerFired(now: now).filter { $0 == .fetch }.count
        var timer = scheduled(state.fetchFailed(refused, now: now))
        XCTAssertEqual(timer, now + .seconds(60))
        let end = now + .seconds(60)
        while now < end {
            now += .milliseconds(100)
            let (token, actions) = state.addWaiter(now: now)
            XCTAssertNil(token, "the last access token expired: nothing to inject")
            fetches += actions.filter { $0 == .fetch }.count
            state.removeWaiter()
            if let due = timer, now >= due {
                let fired = state.timerFired(now: now)
                fetches += fired.filter { $0 == .fetch }.count
                timer = fired.contains(.fetch) ? scheduled(state.fetchFailed(refused, now: now)) : nil
            }
        }
        XCTAssertLessThanOrEqual(fetches, 3, "the first fetch, the refused refresh and one retry at the cap")
        XCTAssertEqual(state.counts.failed["credentials_rejected"], 2)
    }

    func testLastGoodTokenIsUsedUntilUsableUntilThenNil() {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.fetchSucceeded(grant("good", .seconds(200)), now: t0)  // usable until t0+190
        var now = t0 + .seconds(160)
        _ = state.timerFired(now: now)
        var published: [AccessToken?] = []
        while now < t0 + .seconds(250) {
            let actions = state.fetchFailed(transient, now: now)
            for case .publish(let token) in actions { published.append(token) }
            XCTAssertEqual(state.usableToken(at: now)?.value, now < t0 + .seconds(190) ? "good" : nil)
            XCTAssertEqual(state.phase(at: now), now < t0 + .seconds(190) ? .degraded : .failing)
            now = scheduled(actions)!
            XCTAssertNil(state.usableToken(at: t0 + .seconds(190)), "never handed out after usable-until")
            for case .publish(let token) in state.timerFired(now: now) { published.append(token) }
        }
        XCTAssertEqual(published.compactMap { $0 }.count, 0)
        XCTAssertFalse(published.isEmpty, "the expired token is withdrawn")
    }

    func testFiftyRejectionsOfTheCurrentTokenFetchOnceAndKeepItInUse() throws {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.fetchSucceeded(grant("bad", .seconds(3600)), now: t0)
        let bad = try XCTUnwrap(state.usableToken(at: t0))
        var fetches = 0
        for index in 0..<50 {
            let (outcome, actions) = state.rejected(bad, now: t0 + .seconds(1), waiting: index < 10)
            XCTAssertEqual(outcome, .awaitRefetch)
            fetches += actions.filter { $0 == .fetch }.count
            XCTAssertFalse(actions.contains(.publish(nil)), "the current token stays in use: nobody waits")
        }
        XCTAssertEqual(fetches, 1)
        XCTAssertEqual(state.usableToken(at: t0 + .seconds(1)), bad)
        XCTAssertEqual(state.rejectionWaiterCount, 10)
        XCTAssertEqual(state.counts.unauthorizedRefetches, 1)
        // The refetch answers the ten held requests; a report about the old token then replays.
        let actions = state.fetchSucceeded(grant("new", .seconds(3600)), now: t0 + .seconds(2))
        let new = try XCTUnwrap(state.usableToken(at: t0 + .seconds(2)))
        XCTAssertTrue(actions.contains(.resumeRejected(new)))
        XCTAssertEqual(state.rejectionWaiterCount, 0)
        XCTAssertEqual(state.rejected(bad, now: t0 + .seconds(3), waiting: true).outcome, .replay(new))
    }

    /// One request every 10 ms for 20 s of fake time, each answered 401 (token round trip 50 ms);
    /// `acceptFirst`: each token also earns a 2xx (another backend) before its 401.
    private func storm(acceptFirst: Bool) -> [Duration] {
        var sim = RefreshSimulation(state: makeState(), now: t0)
        sim.start()
        while sim.now < t0 + .seconds(20) {
            sim.advance(by: .milliseconds(10))
            if acceptFirst { sim.acceptCurrent() }
            sim.rejectCurrent()
        }
        return sim.fetchStarts.map { $0 - t0 }
    }

    func testABackendThatRejectsEveryTokenFetchesAtMostTenTimesIn20Seconds() {
        let starts = storm(acceptFirst: false)
        XCTAssertLessThanOrEqual(starts.count, 10)
        // The first token's 401 refetches at once; each token rejected before any success
        // doubles the wait: 1 s, 2 s, 4 s, 8 s (then 10 s, past the 20 s).
        XCTAssertEqual(starts.count, 6)
        let waits: [Duration] = [.zero, .seconds(1), .seconds(2), .seconds(4), .seconds(8)]
        for (index, wait) in waits.enumerated() {
            let gap = starts[index + 1] - starts[index]
            XCTAssertGreaterThanOrEqual(gap, wait + .milliseconds(50), "refetch \(index + 1)")
            XCTAssertLessThanOrEqual(gap, wait + .milliseconds(70), "refetch \(index + 1): at once after its wait")
        }
    }

    func testTokensThatEarnA2xxFromOneBackendAndA401FromAnotherStillFetchAtMostTenTimesIn20Seconds() {
        // Each 2xx ends the streak, so each 401 would refetch at once; the budget of 4 refetches
        // per unauthorizedRefetchInterval (10 s) bounds it: the first token, then 4 + 4.
        let starts = storm(acceptFirst: true)
        XCTAssertLessThanOrEqual(starts.count, 10)
        XCTAssertEqual(starts.count, 9)
        XCTAssertEqual(starts.filter { $0 < .seconds(10) }.count, 5)
        XCTAssertGreaterThanOrEqual(starts[5] - starts[1], .seconds(10))
    }

    func testRevocationsOfTokensThatEarnedA2xxAreRefetchedAtOnceUpToFourPerInterval() throws {
        var sim = RefreshSimulation(state: makeState(), now: t0)
        sim.start()
        sim.advance(by: .milliseconds(100))
        for revocation in 1...4 {
            sim.acceptCurrent()
            XCTAssertEqual(sim.rejectCurrent()?.actions, [.evict, .fetch], "revocation \(revocation), 2 s after the last")
            sim.advance(by: .seconds(2))
        }
        // A fifth within 10 s of the first: the refetch waits until the first is 10 s old.
        sim.acceptCurrent()
        let first = sim.state.recentUnauthorizedRefetches[0]
        XCTAssertEqual(sim.rejectCurrent()?.actions, [.evict, .schedule(at: first + .seconds(10))])
        XCTAssertEqual(sim.state.recentUnauthorizedRefetches.count, 4)
    }

    func testTheCapIsUnauthorizedRefetchInterval() {
        let settings = TokenRefreshSettings(unauthorizedRefetchInterval: .seconds(10))
        XCTAssertEqual((0...7).map { settings.unauthorizedRefetchDelay(streak: $0) },
                       [.zero, .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10), .seconds(10)])
        let short = TokenRefreshSettings(unauthorizedRefetchInterval: .milliseconds(300))
        XCTAssertEqual((0...2).map { short.unauthorizedRefetchDelay(streak: $0) },
                       [.zero, .milliseconds(300), .milliseconds(300)])
    }

    func testARevokedTokenThatEarnedA2xxIsRefetchedAtOnceEveryTime() throws {
        var sim = RefreshSimulation(state: makeState(), now: t0)
        sim.start()
        sim.advance(by: .seconds(1))
        for revocation in 1...4 {
            sim.acceptCurrent()
            let revoked = try XCTUnwrap(sim.state.usableToken(at: sim.now))
            let result = try XCTUnwrap(sim.rejectCurrent())
            XCTAssertEqual(result.outcome, .awaitRefetch, "revocation \(revocation)")
            XCTAssertEqual(result.actions, [.evict, .fetch], "revocation \(revocation): at once")
            // More 401s to the revoked token while its replacement is fetched: they wait for it.
            XCTAssertEqual(sim.state.rejected(revoked, now: sim.now, waiting: true).outcome, .awaitRefetch)
            sim.advance(by: .milliseconds(50))
            let replacement = try XCTUnwrap(sim.state.usableToken(at: sim.now))
            XCTAssertNotEqual(replacement.value, revoked.value)
            XCTAssertEqual(sim.state.rejectionWaiterCount, 0, "the holders were resumed with it")
            // A late 401 to the revoked token replays with the replacement; no fetch.
            XCTAssertEqual(sim.state.rejected(revoked, now: sim.now, waiting: true).outcome, .replay(replacement))
            sim.advance(by: .seconds(30))
        }
        XCTAssertEqual(sim.fetchStarts.count, 5)
        XCTAssertEqual(sim.state.counts.unauthorizedRefetches, 4)
    }

    func testTokensRejectedBeforeAnySuccessBackOffAndASuccessResetsTheBackoff() throws {
        var sim = RefreshSimulation(state: makeState(), now: t0)
        sim.start()
        sim.advance(by: .milliseconds(100))
        XCTAssertEqual(sim.rejectCurrent()?.actions, [.evict, .fetch], "the first 401 refetches at once")
        sim.advance(by: .milliseconds(100))
        for wait in [Duration.seconds(1), .seconds(2), .seconds(4)] {
            let rejected = try XCTUnwrap(sim.state.usableToken(at: sim.now))
            let result = try XCTUnwrap(sim.rejectCurrent())
            XCTAssertEqual(result.outcome, .passThrough, "no token soon: the 401 is passed on")
            XCTAssertEqual(result.actions, [.evict, .schedule(at: sim.now + wait)])
            // The token stays in use; more 401s to it start nothing.
            XCTAssertEqual(sim.state.usableToken(at: sim.now), rejected)
            XCTAssertEqual(sim.rejectCurrent()?.outcome, .passThrough)
            XCTAssertEqual(sim.rejectCurrent()?.actions, [])
            let fetches = sim.fetchStarts.count
            sim.advance(by: wait - .milliseconds(1))
            XCTAssertEqual(sim.fetchStarts.count, fetches, "not before the wait")
            sim.advance(by: .milliseconds(100))
            XCTAssertEqual(sim.fetchStarts.count, fetches + 1)
            XCTAssertNotEqual(sim.state.usableToken(at: sim.now), rejected)
        }
        XCTAssertEqual(sim.state.rejectionStreak, 4)
        // A 2xx for an older token counts for nothing; one for the current token ends the streak.
        let current = try XCTUnwrap(sim.state.usableToken(at: sim.now))
        sim.state.accepted(AccessToken(value: "tok-1", generation: 1))
        XCTAssertFalse(sim.state.currentAccepted)
        sim.state.accepted(current)
        XCTAssertTrue(sim.state.currentAccepted)
        // (10 s on: the four refetches of the last 10 s would hold it back otherwise.)
        sim.advance(by: .seconds(10))
        XCTAssertEqual(sim.rejectCurrent()?.actions, [.evict, .fetch], "a token that earned a 2xx: at once")
        sim.advance(by: .milliseconds(100))
        XCTAssertEqual(sim.rejectCurrent()?.actions.last, .schedule(at: sim.now + .seconds(1)), "the backoff starts over")
    }

    func testADelayedRefetchKeepsAnEarlierRefresh() throws {
        var sim = RefreshSimulation(state: makeState(), now: t0, lifetime: .seconds(3))
        sim.start()
        sim.advance(by: .milliseconds(100))
        sim.rejectCurrent()
        sim.advance(by: .milliseconds(100))
        // The refresh (at 80 % of 3 s) comes before the 1 s wait would end: nothing to schedule.
        let refresh = try XCTUnwrap(sim.state.nextFetchAt)
        XCTAssertLessThan(refresh, sim.now + .seconds(3))
        sim.advance(by: .milliseconds(2200))
        XCTAssertEqual(sim.rejectCurrent()?.actions, [.evict])
        XCTAssertEqual(sim.state.nextFetchAt, refresh)
    }

    func testRefetchThatReturnsTheSameTokenResumesHoldersWithIt() throws {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.fetchSucceeded(grant("same", .seconds(3600)), now: t0)
        let token = try XCTUnwrap(state.usableToken(at: t0))
        XCTAssertEqual(state.rejected(token, now: t0 + .seconds(1), waiting: true).outcome, .awaitRefetch)
        let actions = state.fetchSucceeded(grant("same", .seconds(3600)), now: t0 + .seconds(2))
        // The driver compares the value with the rejected token's and replays nothing.
        let resumed = actions.compactMap { action -> AccessToken?? in
            if case .resumeRejected(let answer) = action { return answer }
            return nil
        }
        XCTAssertEqual(resumed.map { $0?.value }, [token.value])
    }

    func testFailedRefetchResumesHoldersWithNil() throws {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.fetchSucceeded(grant("a", .seconds(3600)), now: t0)
        let token = try XCTUnwrap(state.usableToken(at: t0))
        _ = state.rejected(token, now: t0 + .seconds(1), waiting: true)
        let actions = state.fetchFailed(transient, now: t0 + .seconds(2))
        XCTAssertTrue(actions.contains(.resumeRejected(nil)))
        XCTAssertEqual(state.usableToken(at: t0 + .seconds(2)), token, "the last good token is still used")
        // Its retry replaces it, after the fetch backoff: further 401s to it start nothing.
        XCTAssertEqual(state.rejected(token, now: t0 + .seconds(2), waiting: true).outcome, .passThrough)
        XCTAssertEqual(state.rejected(token, now: t0 + .seconds(2), waiting: true).actions, [])
    }

    func testRejectionDuringARefreshWaitsForItWithoutStartingAnother() throws {
        var state = makeState()
        _ = state.start(now: t0)
        let actions = state.fetchSucceeded(grant("a", .seconds(100)), now: t0)
        let refresh = scheduled(actions)!
        let token = try XCTUnwrap(state.usableToken(at: t0))
        XCTAssertEqual(state.timerFired(now: refresh), [.fetch])
        let (outcome, more) = state.rejected(token, now: refresh, waiting: true)
        XCTAssertEqual(outcome, .awaitRefetch)
        XCTAssertEqual(more, [])
        XCTAssertEqual(state.counts.unauthorizedRefetches, 0)
    }

    func testRejectionOfATokenThatIsNotCurrentPassesThrough() throws {
        var state = makeState()
        _ = state.start(now: t0)
        XCTAssertEqual(state.fetchFailed(transient, now: t0).contains(.fetch), false)
        XCTAssertEqual(state.rejected(AccessToken(value: "other"), now: t0, waiting: true).outcome, .passThrough)
    }

    func testSingleFlightManyWaitersOneFetchAllResumed() throws {
        var state = makeState()
        var fetches = 0
        for _ in 0..<200 {
            let (token, actions) = state.addWaiter(now: t0)
            XCTAssertNil(token)
            fetches += actions.filter { $0 == .fetch }.count
        }
        XCTAssertEqual(fetches, 1, "the first waiter starts an idle credential; the rest join")
        XCTAssertEqual(state.waiterCount, 200)
        let actions = state.fetchSucceeded(grant("t", .seconds(60)), now: t0)
        let token = try XCTUnwrap(state.usableToken(at: t0))
        XCTAssertTrue(actions.contains(.resumeWaiters(token)))
        XCTAssertEqual(state.waiterCount, 0)
        XCTAssertEqual(state.addWaiter(now: t0).token, token)
    }

    func testWaitersKeepWaitingThroughFailures() {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.addWaiter(now: t0)
        let actions = state.fetchFailed(transient, now: t0)
        XCTAssertFalse(actions.contains { if case .resumeWaiters = $0 { true } else { false } })
        XCTAssertEqual(state.waiterCount, 1)
        XCTAssertEqual(state.addWaiter(now: t0).actions, [], "waiters do not bypass the backoff")
        state.removeWaiter()
        state.removeWaiter()
        state.removeWaiter()
        XCTAssertEqual(state.waiterCount, 0)
    }

    func testStartAdoptsAUsableCachedToken() {
        var state = makeState()
        let cached = IssuedToken(value: "cached", issuedAt: t0, lifetime: .seconds(100))
        let actions = state.start(now: t0 + .seconds(10), cached: cached)
        XCTAssertEqual(actions.first, .publish(cached.token))
        XCTAssertEqual(state.current?.token.generation, 1, "numbered by this credential")
        XCTAssertNotNil(scheduled(actions))
        XCTAssertFalse(actions.contains(.fetch))
        var expired = makeState()
        XCTAssertEqual(expired.start(now: t0 + .seconds(95), cached: cached), [.fetch])
    }

    func testAChangedBindingFetchesANewTokenWhileTheCurrentOneStaysInUse() {
        var state = makeState()
        XCTAssertEqual(state.bindingChanged(now: t0), [], "nothing before the start")
        _ = state.start(now: t0)
        XCTAssertEqual(state.bindingChanged(now: t0), [], "the fetch under way uses the new key already")
        _ = state.fetchSucceeded(grant("old", .seconds(3600)), now: t0)
        let later = t0 + .seconds(5)
        XCTAssertEqual(state.bindingChanged(now: later), [.fetch])
        XCTAssertEqual(state.usableToken(at: later)?.value, "old", "still handed out until the new token arrives")
        XCTAssertEqual(state.phase(at: later), .refreshing)
        _ = state.fetchSucceeded(grant("new", .seconds(3600)), now: later)
        XCTAssertEqual(state.usableToken(at: later)?.value, "new")
    }

    func testAChangedBindingTheServerRejectsIsRetriedOnTheBackoffScheduleNotOnEveryLook() {
        var state = makeState()
        _ = state.start(now: t0)
        _ = state.fetchSucceeded(grant("old", .seconds(3600)), now: t0)
        let rotated = t0 + .seconds(5)
        XCTAssertEqual(state.bindingChanged(now: rotated), [.fetch])
        // The new certificate is not registered yet: rejected, retried after the backoff cap.
        let retryAt = scheduled(state.fetchFailed(TokenFetchError(.httpStatus(429), retryAfter: .seconds(30)), now: rotated))
        XCTAssertEqual(retryAt, rotated + .seconds(30))
        for second in 1..<30 {
            XCTAssertEqual(state.bindingChanged(now: rotated + .seconds(second)), [],
                           "the watcher's next look at \(second) s does not fetch again")
        }
        XCTAssertEqual(state.usableToken(at: rotated + .seconds(29))?.value, "old")
        XCTAssertEqual(state.bindingChanged(now: rotated + .seconds(30)), [.fetch], "due again")
    }
}
