import Config
import XCTest

/// Rule path patterns: exact, `*` one segment, `**` zero or more.
final class PathPatternTests: XCTestCase {
    private func pattern(_ text: String) throws -> PathPattern { try PathPattern.parse(text).get() }

    func testMatching() throws {
        let cases: [(String, [String], [String])] = [
            ("/v1/orders", ["/v1/orders"], ["/v1/orders/", "/v1/order", "/V1/orders", "/v1/orders/1", "/"]),
            ("/v1/orders/**", ["/v1/orders", "/v1/orders/", "/v1/orders/1", "/v1/orders/1/items/2"], ["/v1/order", "/v1/ordersx", "/v1"]),
            ("/v1/*/items", ["/v1/o/items"], ["/v1/items", "/v1//items", "/v1/a/b/items", "/v1/o/items/"]),
            ("/**", ["/", "/a", "/a/b/"], []),
            ("/", ["/"], ["/a"]),
            ("/a/**/z", ["/a/z", "/a/b/z", "/a/b/c/z"], ["/a/z/", "/a/b", "/z"]),
            ("/a/*", ["/a/b"], ["/a", "/a/", "/a/b/c"]),
        ]
        for (text, matching, other) in cases {
            let compiled = try pattern(text)
            for path in matching { XCTAssertTrue(compiled.matches(path), "\(text) should match \(path)") }
            for path in other { XCTAssertFalse(compiled.matches(path), "\(text) should not match \(path)") }
        }
    }

    func testManySegmentsAgainstSeveralGlobsStayCheap() throws {
        let compiled = try pattern("/**/a/**/b/**/c/**/d")
        let path = "/" + Array(repeating: "x", count: 5_000).joined(separator: "/")
        XCTAssertFalse(compiled.matches(path))
    }

    func testBadPatternsSayWhy() {
        for (text, why) in [("v1", "starts with /"), ("/v1/ord*", "whole segment"), ("/a/../b", "normalized"), ("/a%2Fb", "normalized"),
                            ("/a\\b", "normalized")] {
            guard case .failure(let error) = PathPattern.parse(text) else { return XCTFail(text) }
            XCTAssertTrue(error.description.contains(why), "\(text): \(error)")
        }
    }

    /// The byte comparison a policy uses for literal and literal-then-`**` patterns decides as
    /// the segment matching does, for every pattern and path here.
    func testAPolicyDecidesAsSegmentMatchingDoes() throws {
        let patterns = ["/", "/**", "/a", "/a/", "/a/b", "/a/**", "/a/b/**", "/a/*", "/*/b", "/a/**/z", "/ab/**", "/a//b"]
        let paths = ["/", "/a", "/a/", "/a/b", "/a/b/", "/a/b/c", "/ab", "/abc/d", "/b", "/a/z", "/a/x/y/z", "/ab/", "/a//b", "/b/a"]
        for text in patterns {
            let pattern = try PathPattern.parse(text).get()
            let policy = RoutePolicy(rules: [RouteRule(name: "r", methods: ["GET"], paths: [pattern])])
            for path in paths {
                let expected = pattern.matches(segments: PathPattern.segments(of: path))
                XCTAssertEqual(policy.decide(method: "GET", path: path) == .allowed(rule: "r"), expected, "\(text) on \(path)")
                XCTAssertEqual(policy.decide(method: "POST", path: path), .denied)
            }
        }
    }

    /// With rules indexed by their first segment, the first rule that allows a request still
    /// wins, whether it starts with the path's first segment or with a wildcard.
    func testTheFirstAllowingRuleWinsAcrossFirstSegments() throws {
        func rule(_ name: String, _ methods: [String], _ paths: [String]) throws -> RouteRule {
            RouteRule(name: name, methods: methods, paths: try paths.map { try PathPattern.parse($0).get() })
        }
        let policy = RoutePolicy(rules: [
            try rule("post-a", ["POST"], ["/a/**"]), try rule("get-any-b", ["GET"], ["/*/b"]), try rule("get-a-b", ["GET"], ["/a/b"]),
            try rule("custom", ["PURGE"], ["/c"]), try rule("anything-x", [], ["/x/**"]), try rule("health", ["GET"], ["/health", "/a/z"]),
        ])
        XCTAssertEqual(policy.decide(method: "GET", path: "/a/b"), .allowed(rule: "get-any-b"), "the wildcard rule comes first")
        XCTAssertEqual(policy.decide(method: "POST", path: "/a/b"), .allowed(rule: "post-a"))
        XCTAssertEqual(policy.decide(method: "GET", path: "/z/b"), .allowed(rule: "get-any-b"))
        XCTAssertEqual(policy.decide(method: "PURGE", path: "/c"), .allowed(rule: "custom"), "a method without a bit")
        XCTAssertEqual(policy.decide(method: "GET", path: "/c"), .denied)
        XCTAssertEqual(policy.decide(method: "DELETE", path: "/x/1"), .allowed(rule: "anything-x"))
        XCTAssertEqual(policy.decide(method: "GET", path: "/a/z"), .allowed(rule: "health"), "a rule's second pattern")
        XCTAssertEqual(policy.decide(method: "GET", path: "/nowhere"), .denied)
    }
}
