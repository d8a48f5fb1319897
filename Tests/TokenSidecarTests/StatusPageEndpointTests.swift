import Foundation
import TestSupport
import XCTest

/// The status page of a running sidecar lists every credential and route and never a token or
/// a secret, as HTML and as JSON.
final class StatusPageEndpointTests: XCTestCase {
    func testTheStatusPageShowsCredentialsAndRoutesButNoTokenOrSecret() throws {
        let tokens = try FixtureServer.tokenServer(["token_prefix": "SENTINEL-STATUS-TOKEN-"])
        let backend = try FixtureServer.backend(log: "b.jsonl")
        let path = try writeConfig("""
        listen: "127.0.0.1:0"
        admin: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "http://127.0.0.1:\(tokens.port)/token"
            clientId: "c"
            secret: "SENTINEL-STATUS-SECRET"
            auth: post
          fixed:
            type: static
            token: "SENTINEL-STATIC-TOKEN"
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
          - host: "static.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: fixed
            clientAuthorization: keep
        """)
        let sidecar = try CapturedSidecar(configPath: path)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && (try? fetch(port: sidecar.adminPort, "/readyz"))?.status != 200 {
            Thread.sleep(forTimeInterval: 0.1)
        }
        let client = try RawClient(port: sidecar.port)
        for _ in 0..<3 {
            client.send("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n")
            XCTAssertEqual(try client.readResponse().status, 200)
        }
        client.send("GET http://nowhere.test/ HTTP/1.1\r\nHost: nowhere.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 403)

        let html = try fetch(port: sidecar.adminPort, "/")
        XCTAssertEqual(html.status, 200)
        XCTAssertTrue(html.header("Content-Type")?.hasPrefix("text/html") ?? false)
        for name in ["partner", "fixed", "oauth2 (client_secret_post)", "static", "api.test:80", "static.test:80",
                     "http://127.0.0.1:\(backend.port)", "keep", "http_request_denied"] {
            XCTAssertTrue(html.text.contains(name), "\(name) missing from the page")
        }
        let json = try fetch(port: sidecar.adminPort, "/", headers: [("Accept", "application/json")])
        let object = try XCTUnwrap(json.json)
        let credentials = try XCTUnwrap(object["credentials"] as? [[String: Any]])
        XCTAssertEqual(Set(credentials.compactMap { $0["name"] as? String }), ["partner", "fixed"])
        XCTAssertEqual(credentials.first { $0["name"] as? String == "partner" }?["state"] as? String, "valid")
        XCTAssertEqual((object["routes"] as? [[String: Any]])?.count, 2)
        XCTAssertGreaterThanOrEqual(object["requests"] as? Int ?? 0, 4)
        for body in [html.text, json.text] {
            XCTAssertFalse(body.contains("SENTINEL"), "a token or a secret on the status page")
        }
    }
}
