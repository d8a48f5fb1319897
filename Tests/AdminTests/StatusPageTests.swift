import Admin
import EventLoop
import Foundation
import TestSupport
import XCTest

/// The status page at `/`: HTML by default, the same data as JSON on `Accept: application/json`,
/// every value escaped, no script and no external asset.
final class StatusPageTests: XCTestCase {
    private var thread: ServerThread?

    override func tearDown() {
        thread?.stop()
        thread = nil
    }

    private let report = StatusReport(
        generatedAt: WallClockTime(secondsSince1970: 1_800_000_000), uptimeSeconds: 3725,
        credentials: [
            StatusReport.Credential(name: "partner", kind: "oauth2 (private_key_jwt)", state: "valid", fingerprint: "a1b2c3d4",
                                    expiresInSeconds: 1800, lastFetch: WallClockTime(secondsSince1970: 1_799_998_200),
                                    fetches: 3, failures: 1, unauthorized: 2),
            StatusReport.Credential(name: "<script>alert(1)</script>", kind: "static", state: "failing",
                                    lastError: "assertionFile /x: \"expired\" & <gone>"),
        ],
        routes: [StatusReport.Route(host: "api.test:80", upstream: "https://api.example.com:443", credential: "partner",
                                    clientAuthorization: "keep")],
        pools: [StatusReport.Pool(upstream: "api.example.com:443", idle: 2, leased: 1, connecting: 0)],
        requests: 42, requestsPerSecond: 3.25, clientConnections: 5,
        errors: [(type: "destination_unavailable", count: 2), (type: "http_request_denied", count: 1)])

    private func start() throws -> Int {
        let report = self.report
        let provider = AdminProvider(status: { $0(report) })
        let thread = try ServerThread { loop in [try AdminServer(address: loopback, loop: loop, provider: provider)] }
        try thread.start()
        self.thread = thread
        return thread.addresses[0].port
    }

    func testHTMLShowsEveryPartEscapedAndRefreshesItself() throws {
        let port = try start()
        let page = try fetch(port: port, "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        let html = page.text
        XCTAssertTrue(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"))
        for part in ["partner", "oauth2 (private_key_jwt)", "a1b2c3d4", "30m 00s", "api.test:80", "https://api.example.com:443",
                     "keep", "api.example.com:443", "destination_unavailable", "http_request_denied", "1h 02m", "3.3"] {
            XCTAssertTrue(html.contains(part), "\(part) missing")
        }
        XCTAssertFalse(html.contains("<script"), "values are escaped; the page has no script")
        XCTAssertTrue(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        XCTAssertTrue(html.contains("assertionFile /x: &quot;expired&quot; &amp; &lt;gone&gt;"))
        XCTAssertFalse(html.contains("http://") || html.contains("src="), "no external asset")
    }

    func testJSONCarriesTheSameData() throws {
        let port = try start()
        let response = try fetch(port: port, "/", headers: [("Accept", "application/json")])
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Content-Type"), "application/json")
        let object = try XCTUnwrap(response.json)
        XCTAssertEqual(object["requests"] as? Int, 42)
        XCTAssertEqual(object["uptimeSeconds"] as? Int, 3725)
        XCTAssertEqual((object["errors"] as? [String: Int])?["destination_unavailable"], 2)
        let credentials = try XCTUnwrap(object["credentials"] as? [[String: Any]])
        XCTAssertEqual(credentials.map { $0["name"] as? String }, ["partner", "<script>alert(1)</script>"])
        XCTAssertEqual(credentials.first?["unauthorized"] as? Int, 2)
        XCTAssertEqual(credentials.first?["expiresInSeconds"] as? Int, 1800)
        let routes = try XCTUnwrap(object["routes"] as? [[String: Any]])
        XCTAssertEqual(routes.first?["clientAuthorization"] as? String, "keep")
        let pools = try XCTUnwrap(object["pools"] as? [[String: Any]])
        XCTAssertEqual(pools.first?["idle"] as? Int, 2)
    }

    func testNoStatusYetIs503() throws {
        let thread = try ServerThread { loop in [try AdminServer(address: loopback, loop: loop, provider: AdminProvider())] }
        try thread.start()
        self.thread = thread
        XCTAssertEqual(try fetch(port: thread.addresses[0].port, "/").status, 503)
    }
}
