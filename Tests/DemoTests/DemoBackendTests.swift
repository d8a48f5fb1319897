import Admin
import Demo
import EventLoop
import TestSupport
import XCTest

final class DemoBackendTests: XCTestCase {
    private var thread: ServerThread?
    private let registry = DemoTokenRegistry()

    override func tearDown() {
        thread?.stop()
        thread = nil
    }

    private func startBackend() throws -> Int {
        let registry = self.registry
        let thread = try ServerThread { loop in [try DemoBackend(address: loopback, loop: loop, registry: registry)] }
        try thread.start()
        self.thread = thread
        return thread.addresses[0].port
    }

    func testValidTokenIsEchoedRedacted() throws {
        let port = try startBackend()
        let token = registry.issue(lifetime: .seconds(60))
        let response = try fetch(port: port, "/db/doc?rev=1", method: "POST",
                                 headers: [("Authorization", "Bearer \(token)"), ("X-App", "demo")],
                                 body: Array("{}".utf8))
        XCTAssertEqual(response.status, 200)
        XCTAssertFalse(response.text.contains(token), "the whole token is never echoed")
        let object = try XCTUnwrap(response.json)
        XCTAssertEqual(object["ok"] as? Bool, true)
        XCTAssertEqual(object["method"] as? String, "POST")
        XCTAssertEqual(object["path"] as? String, "/db/doc")
        XCTAssertEqual(object["query"] as? [[String]], [["rev", "1"]])
        XCTAssertEqual(object["bodyBytes"] as? Int, 2)
        let headers = try XCTUnwrap(object["headers"] as? [[String]])
        XCTAssertTrue(headers.contains(["Authorization", "Bearer \(token.prefix(8))…"]), "\(headers)")
        XCTAssertTrue(headers.contains(["X-App", "demo"]))
        XCTAssertEqual(object["token"] as? String, "\(token.prefix(8))…")
    }

    func testMissingTokenIs401WithoutErrorCode() throws {
        let port = try startBackend()
        let response = try fetch(port: port, "/x")
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(response.header("WWW-Authenticate"), #"Bearer realm="token-sidecar-demo""#)
    }

    func testUnknownExpiredAndMalformedTokensAreInvalid() throws {
        let port = try startBackend()
        registry.insert("demo-expired", expiresAt: .now - .seconds(1))
        for value in ["Bearer demo-unknown", "Bearer demo-expired", "Basic abc", "Bearer"] {
            let response = try fetch(port: port, "/x", headers: [("Authorization", value)])
            XCTAssertEqual(response.status, 401, value)
            XCTAssertEqual(response.header("WWW-Authenticate"),
                           #"Bearer realm="token-sidecar-demo", error="invalid_token""#, value)
        }
    }

    func testIssuerAndBackendTogether() throws {
        // One loop, one registry: what `token-sidecar demo` runs.
        let thread = try ServerThread { loop in
            let registry = DemoTokenRegistry()
            return [
                try DemoIssuer(address: loopback, loop: loop, clientID: "app", clientSecret: "pw", registry: registry),
                try DemoBackend(address: loopback, loop: loop, registry: registry),
            ]
        }
        try thread.start()
        defer { thread.stop() }
        let issued = try fetch(port: thread.addresses[0].port, "/oauth/token", method: "POST",
                               body: Array("grant_type=client_credentials&client_id=app&client_secret=pw".utf8))
        let token = try XCTUnwrap(issued.json?["access_token"] as? String)
        XCTAssertEqual(try fetch(port: thread.addresses[1].port, "/", headers: [("Authorization", "bearer \(token)")]).status, 200)
    }
}
