import TestSupport
import XCTest
@testable import Proxy

/// `routes[].clientAuthorization` over in-memory streams: `replace` (default) drops a client's
/// Authorization and injects; `keep` forwards a client's own Authorization untouched, injects
/// nothing and waits for no token, but still strips an Authorization named in `Connection`.
final class ClientSessionClientAuthorizationTests: XCTestCase {
    /// `request` sent by `client`; the backend's view of it, answered with a 200 that reaches the client.
    private func forwarded(_ harness: SessionHarness, _ client: MemoryStream, _ request: String,
                           file: StaticString = #filePath, line: UInt = #line) throws -> MemoryRequest {
        try harness.forward(request, from: client, file: file, line: line)
    }

    func testKeepForwardsTheClientsOwnAuthorizationWithoutWaitingForAToken() throws {
        // No token can ever be fetched.
        let credential = UnavailableCredential()
        let records = AccessRecords()
        let harness = try SessionHarness(credential: credential, route: ["clientAuthorization: keep"], accessLog: records)
        let client = harness.connectClient()
        let own = try forwarded(harness, client, "GET /own HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer callers-own\r\n\r\n")
        XCTAssertEqual(credential.waits, 0, "no token wait")
        XCTAssertEqual(own.headers("Authorization"), ["Bearer callers-own"])

        // Without an Authorization of its own the request needs the (unavailable) token.
        client.clearDelivered()
        client.receive("GET /none HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let response = MemoryMessages.response(client.readAll())
        XCTAssertEqual(response.status, 503)
        XCTAssertNotNil(response.header("Retry-After"))
        XCTAssertEqual(credential.waits, 1)
        XCTAssertEqual(harness.backends.count, 1)
        XCTAssertTrue(harness.backends[0].peerReads().isEmpty, "nothing more reached the backend")
        XCTAssertEqual(records.all.map(\.auth), [.kept, .none], "the access log says what happened")
    }

    func testKeepStillStripsAConnectionNamedAuthorizationAndThenInjects() throws {
        let records = AccessRecords()
        let harness = try SessionHarness(route: ["clientAuthorization: keep"], accessLog: records)
        let client = harness.connectClient()
        let seen = try [
            forwarded(harness, client, "GET /a HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer mine\r\n\r\n"),
            forwarded(harness, client, "GET /b HTTP/1.1\r\nHost: api.test\r\n\r\n"),
            forwarded(harness, client, "GET /c HTTP/1.1\r\nHost: api.test\r\nConnection: Authorization\r\nAuthorization: Bearer hop\r\n\r\n"),
        ].map { $0.headers("Authorization") }
        XCTAssertEqual(seen, [["Bearer mine"], ["Bearer tok-1"], ["Bearer tok-1"]])
        XCTAssertEqual(records.all.map(\.auth), [.kept, .injected, .injected])
    }

    func testReplaceDropsTheClientsAuthorization() throws {
        let harness = try SessionHarness(credential: RotatingCredential(), route: ["clientAuthorization: replace"])
        let client = harness.connectClient()
        let request = try forwarded(harness, client, "GET /own HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer callers-own\r\n\r\n")
        XCTAssertEqual(request.headers("Authorization"), ["Bearer tok-1"])
    }
}
