import XCTest

/// `token-sidecar demo`: the main job on a machine with no IdP.
final class DemoTests: XCTestCase {
    func testDemoShowsAProxiedRequestWithAnInjectedToken() throws {
        let outcome = try runSidecar(["demo", "--once", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        XCTAssertEqual(outcome.status, 0, outcome.err)
        XCTAssertTrue(outcome.out.contains("-> HTTP/1.1 200 OK"), outcome.out)
        XCTAssertTrue(outcome.out.contains("\"Authorization\",\"Bearer demo-"), "the backend saw an injected demo token")
        XCTAssertTrue(outcome.out.contains("curl -s -x http://127.0.0.1:"), "prints commands to try")
    }
}
