import Foundation
import Logging
import TestSupport
import XCTest

/// `routes[].clientAuthorization`: `replace` (default) drops a client's Authorization and
/// injects; `keep` forwards a client's own Authorization untouched and injects nothing.
final class ClientAuthorizationTests: XCTestCase {
    private func yaml(tokenURL: String, backend: Backend, policy: String) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          partner:
            type: oauth2
            tokenUrl: "\(tokenURL)"
            clientId: "c"
            secret: "s"
            tokenWait: 2s
          api:
            type: static
            token: "abc"
        routes:
          - host: "keep.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: partner
            clientAuthorization: \(policy)
          - host: "static.test"
            upstream: "http://127.0.0.1:\(backend.port)"
            credential: api
            clientAuthorization: keep
        """
    }

    func testKeepForwardsTheClientsOwnAuthorizationWithoutWaitingForAToken() throws {
        let backend = try Backend()
        // No token can ever be fetched: the token URL is a port nobody listens on.
        let records = AccessRecords()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "http://127.0.0.1:9/token", backend: backend, policy: "keep"), accessLog: records)
        let client = try RawClient(port: proxy.port)
        let started = Date()
        client.send("GET /own HTTP/1.1\r\nHost: keep.test\r\nAuthorization: Bearer callers-own\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0, "no token wait")
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer callers-own"])

        // Without an Authorization of its own the request needs the (unavailable) token.
        client.send("GET /none HTTP/1.1\r\nHost: keep.test\r\n\r\n")
        let response = try client.readResponse()
        XCTAssertEqual(response.status, 503)
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(backend.requests().count, 1)
        XCTAssertEqual(records.all.map(\.auth), [.kept, .none], "the access log says what happened")
    }

    func testKeepStillStripsAConnectionNamedAuthorizationAndThenInjects() throws {
        let backend = try Backend()
        let records = AccessRecords()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "http://127.0.0.1:9/token", backend: backend, policy: "keep"), accessLog: records)
        let client = try RawClient(port: proxy.port)
        client.send("GET /a HTTP/1.1\r\nHost: static.test\r\nAuthorization: Bearer mine\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        client.send("GET /b HTTP/1.1\r\nHost: static.test\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        client.send("GET /c HTTP/1.1\r\nHost: static.test\r\nConnection: Authorization\r\nAuthorization: Bearer hop\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        let seen = backend.requests().map { Backend.headerValues($0, "Authorization") }
        XCTAssertEqual(seen, [["Bearer mine"], ["Bearer abc"], ["Bearer abc"]])
        XCTAssertEqual(records.all.map(\.auth), [.kept, .injected, .injected])
    }

    func testReplaceDropsTheClientsAuthorization() throws {
        let backend = try Backend()
        let tokens = try TokenServer()
        let proxy = try ProxyHarness(yaml: yaml(tokenURL: "http://127.0.0.1:\(tokens.port)/token", backend: backend, policy: "replace"))
        let client = try RawClient(port: proxy.port)
        client.send("GET /own HTTP/1.1\r\nHost: keep.test\r\nAuthorization: Bearer callers-own\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 200)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
    }
}
