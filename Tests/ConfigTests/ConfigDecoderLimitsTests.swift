import Config
import XCTest

/// `limits:` of routes and credentials.
final class ConfigDecoderLimitsTests: XCTestCase {
    private func yaml(route: String = "", credential: String = "") -> String {
        """
        credentials:
          partner: {type: static, token: t\(credential)}
        routes:
          - host: api.example.com
            credential: partner
        \(route)
        """
    }

    func testRouteAndCredentialLimitsDecodeAndRenderBack() throws {
        let config = try XCTUnwrap(parseOK(yaml(route: "    limits: {rate: {perSecond: 50, burst: 100}, budget: {requests: 10000, per: day}}",
                                                credential: ", limits: {rate: {perSecond: 0.5}}")))
        XCTAssertEqual(config.routes[0].limits, LimitsConfig(rate: .init(perSecond: 50, burst: 100), budget: .init(requests: 10000, per: .day)))
        XCTAssertEqual(config.credentials[0].limits, LimitsConfig(rate: .init(perSecond: 0.5, burst: 1)), "burst defaults to a second's worth, at least 1")
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains("    limits: {rate: {perSecond: 50, burst: 100}, budget: {requests: 10000, per: day}}"), rendered)
        let again = try XCTUnwrap(parseOK(rendered))
        XCTAssertEqual(again.routes[0].limits, config.routes[0].limits, "check's rendering loads back")
        XCTAssertEqual(again.credentials[0].limits, config.credentials[0].limits)
    }

    func testMistakesNameTheKeyAndTheProblem() {
        let cases: [(String, String)] = [
            ("    limits: {}", "c.yaml: routes[0].limits: give rate, budget or both"),
            ("    limits: {rate: {perSecond: 0}}", "c.yaml: routes[0].limits.rate.perSecond: expected a number from 0.0000116 (one a day)"),
            ("    limits: {rate: {perSecond: 0.00001}}", "c.yaml: routes[0].limits.rate.perSecond: expected a number from 0.0000116 (one a day)"),
            ("    limits: {rate: {burst: 3}}", "c.yaml: routes[0].limits.rate.perSecond: required"),
            ("    limits: {rate: {perSecond: 5, burst: 0}}", "c.yaml: routes[0].limits.rate.burst:"),
            ("    limits: {budget: {requests: 10, per: week}}", "c.yaml: routes[0].limits.budget.per:"),
            ("    limits: {budget: {per: day}}", "c.yaml: routes[0].limits.budget.requests: required"),
            ("    limits: {budget: {requests: 10}}", "c.yaml: routes[0].limits.budget.per: required"),
            ("    limits: {rate: {perSecond: 5}, quota: 3}", "c.yaml: routes[0].limits.quota"),
        ]
        for (route, expected) in cases {
            let problems = problemLines(yaml(route: route))
            XCTAssertTrue(problems.contains { $0.hasPrefix(expected) }, "\(route): \(problems)")
        }
        XCTAssertTrue(problemLines(yaml(credential: ", limits: {rate: {perSecond: -1}}")).contains {
            $0.hasPrefix("c.yaml: credentials.partner.limits.rate.perSecond:")
        })
    }
}
