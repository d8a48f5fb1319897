@testable import Admin
import XCTest

/// The status page's shared token cache section and JSON: shown only for credentials with a
/// shared cache, its state and counters.
final class SharedCacheReportTests: XCTestCase {
    private func report(_ shared: SharedCacheReport?) -> StatusReport {
        StatusReport(generatedAt: WallClockTime(secondsSince1970: 1_800_000_000), uptimeSeconds: 5,
                     credentials: [StatusReport.Credential(name: "idp", kind: "oauth2", state: "valid", sharedCache: shared)],
                     routes: [], pools: [], requests: 0, requestsPerSecond: 0, clientConnections: 0, errors: [])
    }

    func testSectionOnlyWithASharedCache() {
        XCTAssertFalse(StatusPage.html(report(nil)).contains("Shared token cache"))
        XCTAssertFalse(report(nil).json.text.contains("sharedCache"))
        let shared = SharedCacheReport(available: true, hits: 12, misses: 3, leasesWon: 2, leasesWaited: 1, fallbacks: 0, errors: 0)
        let html = StatusPage.html(report(shared))
        XCTAssertTrue(html.contains("<h2>Shared token cache</h2>"))
        XCTAssertTrue(html.contains("<span class=\"ok\">sharing</span>"))
        XCTAssertTrue(report(shared).json.text.contains(
            "\"sharedCache\":{\"state\":\"sharing\",\"hits\":12,\"misses\":3,\"leasesWon\":2,\"leasesWaited\":1,\"fallbacks\":0,\"errors\":0}"),
            report(shared).json.text)
    }

    func testUnavailableIsMarkedBad() {
        let down = SharedCacheReport(available: false, hits: 0, misses: 0, leasesWon: 0, leasesWaited: 0, fallbacks: 4, errors: 4)
        XCTAssertTrue(StatusPage.html(report(down)).contains("<span class=\"bad\">unavailable (fetching alone)</span>"))
    }
}
