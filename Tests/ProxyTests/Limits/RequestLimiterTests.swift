import Config
import XCTest
@testable import Proxy

/// A route's and a credential's limits together, and what the registry keeps across reloads.
final class RequestLimiterTests: XCTestCase {
    private let wall = 1_800_000_000 - 1_800_000_000 % 60

    func testTheBudgetRefusesBeforeTheRateSpendsAToken() {
        let limiter = RequestLimiter(scope: "route api.test:80", config: LimitsConfig(rate: .init(perSecond: 1, burst: 5),
                                                                                      budget: .init(requests: 2, per: .minute)), now: 0)
        XCTAssertEqual(limiter.admit(now: 0, wall: wall), .admitted)
        XCTAssertEqual(limiter.admit(now: 0, wall: wall), .admitted)
        XCTAssertEqual(limiter.admit(now: 0, wall: wall), .refused(scope: "route api.test:80", kind: .budget, retryAfter: 60))
        let status = limiter.status(now: 0, wall: wall)
        XCTAssertEqual(status.rateTokens, 3, "the refused request took no token")
        XCTAssertEqual(status.budgetRemaining, 0)
        XCTAssertEqual(status.refusedBudget, 1)
        XCTAssertEqual(status.refusedRate, 0)
    }

    func testACredentialRefusalGivesBackWhatTheRouteTook() {
        let registry = LimiterRegistry()
        let route = registry.limiter("route a:80", LimitsConfig(rate: .init(perSecond: 1, burst: 3)))
        let credential = registry.limiter("credential partner", LimitsConfig(budget: .init(requests: 1, per: .day)))
        let limits = try! XCTUnwrap(RouteLimits.make(route: route, credential: credential, enforced: true))
        XCTAssertEqual(limits.admit(), .admitted)
        guard case .refused(let scope, .budget, _) = limits.admit() else { return XCTFail("admitted") }
        XCTAssertEqual(scope, "credential partner")
        XCTAssertEqual(route.status(now: 0, wall: wall).rateTokens.map { $0 >= 2 }, true, "the route's token was given back")
        XCTAssertNil(RouteLimits.make(route: nil, credential: nil, enforced: true), "no limits: nothing to ask")
    }

    func testAReloadKeepsUnchangedLimitsAndTheirState() {
        let registry = LimiterRegistry()
        let config = LimitsConfig(budget: .init(requests: 10, per: .hour))
        let first = registry.limiter("route a:80", config)
        XCTAssertTrue(registry.limiter("route a:80", config) === first, "the same limits: the same limiter")
        XCTAssertFalse(registry.limiter("route a:80", LimitsConfig(budget: .init(requests: 20, per: .hour))) === first, "changed: afresh")
        _ = registry.limiter("route b:80", config)
        registry.keep(only: ["route b:80"])
        XCTAssertEqual(registry.statuses().map(\.scope), ["route b:80"])
    }

    func testTheRefusalIsA429WithRetryAfter() {
        let error = LimitVerdict.refused(scope: "route a:80", kind: .rate, retryAfter: 2).error
        XCTAssertEqual(error?.status, 429)
        XCTAssertEqual(error?.retryAfter, 2)
        XCTAssertEqual(error?.type, "http_request_denied")
        XCTAssertEqual(error?.message, "route a:80: rate limit reached; retry in 2 s")
        XCTAssertNil(LimitVerdict.admitted.error)
    }
}
