import Config
import XCTest

/// `routes[].rules` and `enforcement`.
final class ConfigDecoderRulesTests: XCTestCase {
    private let head = "credentials:\n  partner: {type: static, token: t}\nroutes:\n  - host: api.example.com\n    credential: partner\n"

    func testRulesDecodeInOrderWithTheirEnforcement() throws {
        let config = try XCTUnwrap(parseOK(head + """
                enforcement: audit
                rules:
                  - {name: read-orders, methods: [GET, HEAD], paths: ["/v1/orders/**"]}
                  - {name: create-order, methods: [POST], paths: ["/v1/orders"]}
                  - {paths: ["/health"]}
            """))
        let policy = try XCTUnwrap(config.routes.first?.policy)
        XCTAssertEqual(policy.enforcement, .audit)
        XCTAssertEqual(policy.rules.map(\.name), ["read-orders", "create-order", "rule 3"])
        XCTAssertEqual(policy.rules[0].methods, ["GET", "HEAD"])
        XCTAssertEqual(policy.decide(method: "GET", path: "/v1/orders/1"), .allowed(rule: "read-orders"))
        XCTAssertNil(try XCTUnwrap(parseOK(head)).routes.first?.policy, "no rules: no policy")
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains("      - {name: \"read-orders\", methods: [GET, HEAD], paths: [\"/v1/orders/**\"]}"), rendered)
        XCTAssertEqual(try XCTUnwrap(parseOK(rendered)).routes.first?.policy, policy, "check's rendering loads back")
    }

    func testMistakesNameTheKeyAndTheProblem() {
        let problems = problemLines(head + """
                enforcement: warn
                rules:
                  - {name: a, methods: [get], paths: ["v1/**"]}
                  - {name: a, paths: ["/v1/ord*"]}
                  - {name: b}
                  - {name: c, verbs: [GET], paths: ["/x"]}
            """)
        for expected in [
            "c.yaml: routes[0].rules[0].methods: 'get' is not a method (uppercase letters, as GET or POST)",
            "c.yaml: routes[0].rules[0].paths: 'v1/**': a path pattern starts with /, as in /v1/orders/**",
            "c.yaml: routes[0].rules[1].name: 'a' names another rule of this route already",
            "c.yaml: routes[0].rules[2]: a rule needs methods, paths or both (a rule that allows everything is no rule)",
        ] {
            XCTAssertTrue(problems.contains(expected), "missing \(expected) in \(problems)")
        }
        XCTAssertTrue(problems.contains { $0.hasPrefix("c.yaml: routes[0].enforcement:") }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("rules[1].paths") && $0.contains("whole segment") }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("rules[3].verbs") }, "\(problems)")
        XCTAssertTrue(problemLines(head + "    enforcement: audit\n").contains("c.yaml: routes[0].enforcement: applies to a route's rules; this route has none"))
    }

    func testTopLevelEnforcementIsEachRouteDefaultAndAuditNamesItsFile() throws {
        let rules = "    rules:\n      - {methods: [GET]}\n"
        let config = try XCTUnwrap(parseOK("audit: {file: /var/log/ts/audit.jsonl}\nenforcement: audit\n" + head + rules
            + "  - host: strict.example.com\n    credential: partner\n    enforcement: enforce\n" + rules))
        XCTAssertEqual(config.enforcement, .audit)
        XCTAssertEqual(config.routes.map { $0.policy?.enforcement }, [.audit, .enforce], "a route's own enforcement wins")
        XCTAssertEqual(config.audit, AuditConfig(file: "/var/log/ts/audit.jsonl"))
        XCTAssertEqual(try XCTUnwrap(parseOK("audit: {file: \"-\"}\n" + head)).audit?.toStandardOutput, true)
        XCTAssertNil(try XCTUnwrap(parseOK(head)).audit)
        let rendered = config.renderEffective()
        XCTAssertTrue(rendered.contains("audit: {file: \"/var/log/ts/audit.jsonl\"}"), rendered)
        let again = try XCTUnwrap(parseOK(rendered))
        XCTAssertEqual(again.audit, config.audit, "check's rendering loads back")
        XCTAssertEqual(again.routes.map { $0.policy?.enforcement }, [.audit, .enforce])
        XCTAssertTrue(problemLines("audit: {}\n" + head).contains { $0.hasPrefix("c.yaml: audit.file: required") }, "\(problemLines("audit: {}\n" + head))")
        XCTAssertTrue(problemLines("audit: {file: /x, rotate: daily}\n" + head).contains { $0.hasPrefix("c.yaml: audit.rotate") })
        XCTAssertTrue(problemLines("enforcement: warn\n" + head).contains { $0.hasPrefix("c.yaml: enforcement:") })
    }
}
