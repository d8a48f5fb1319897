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

    /// Few exact routes are searched in order, many are hashed: both find the same routes.
    func testFewAndManyExactRoutesFindTheSame() {
        for count in [1, RouteTable.maxScannedExact, RouteTable.maxScannedExact + 1, 40] {
            let table = RouteTable((0..<count).map { route("host\($0).test", "c\($0)") } + [route("*.test", "suffix")])
            for index in 0..<count {
                XCTAssertEqual(table.route(host: "HOST\(index).test", port: 80)?.credential, "c\(index)", "\(count) routes")
                XCTAssertEqual(table.index(normalizedHost: "host\(index).test", port: 80), index)
            }
            XCTAssertEqual(table.route(host: "host0.test", port: 81)?.credential, nil, "another port")
            XCTAssertEqual(table.route(host: "host\(count).test", port: 80)?.credential, "suffix")
        }
    }

    func testEmptyTable() {
        XCTAssertNil(RouteTable([]).route(host: "a.test", port: 80))
    }
}
