import Config
import XCTest

final class RouteTableTests: XCTestCase {
    private func route(_ host: String, _ credential: String) -> RouteConfig {
        RouteConfig(host: pattern(host), credential: credential)
    }

    func testPrecedence() {
        let table = RouteTable([
            route("*.example.com", "short"),
            route("api.example.com", "exact"),
            route("*.b.example.com", "long"),
            route("*.example.com:8443", "tls-port"),
            route("api.example.com:8080", "exact-port"),
        ])
        XCTAssertEqual(table.route(host: "api.example.com", port: 80)?.credential, "exact")
        XCTAssertEqual(table.route(host: "API.example.com.", port: 80)?.credential, "exact")
        XCTAssertEqual(table.route(host: "api.example.com", port: 8080)?.credential, "exact-port")
        XCTAssertEqual(table.route(host: "x.b.example.com", port: 80)?.credential, "long")
        XCTAssertEqual(table.route(host: "b.example.com", port: 80)?.credential, "short")
        XCTAssertEqual(table.route(host: "other.example.com", port: 80)?.credential, "short")
        XCTAssertEqual(table.route(host: "other.example.com", port: 8443)?.credential, "tls-port")
        XCTAssertNil(table.route(host: "example.com", port: 80))
        XCTAssertNil(table.route(host: "other.example.com", port: 9999))
        XCTAssertNil(table.route(host: "unrelated.test", port: 80))
    }

    func testFirstExactDuplicateWins() {
        let table = RouteTable([route("a.test", "first"), route("A.test", "second")])
        XCTAssertEqual(table.route(host: "a.test", port: 80)?.credential, "first")
        XCTAssertEqual(table.routes.count, 2)
    }

    func testEqualLengthSuffixesKeepFileOrder() {
        let table = RouteTable([route("*.aa.test", "aa"), route("*.bb.test", "bb")])
        XCTAssertEqual(table.route(host: "x.bb.test", port: 80)?.credential, "bb")
        XCTAssertEqual(table.route(host: "x.aa.test", port: 80)?.credential, "aa")
    }

    func testEmptyTable() {
        XCTAssertNil(RouteTable([]).route(host: "a.test", port: 80))
    }
}
