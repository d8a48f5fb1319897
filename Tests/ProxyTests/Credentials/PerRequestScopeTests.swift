import Foundation
import TestSupport
import XCTest

/// `scopeHeader`/`allowedScopes` and `audienceHeader`/`allowedAudiences` end to end against a
/// real token endpoint (Fixtures/sts_server.py): each distinct set is its own token, requested
/// with exactly its scope string and reused; nothing outside the allowed list is ever requested;
/// the app's header never reaches the backend; the tokens held stay within `cacheSize`.
final class PerRequestScopeTests: XCTestCase {
    private static var client: [String: Any] { ["client_id": "partner-app", "client_secret": "partner-secret"] }

    private func yaml(_ sts: STSServer, scopes: [String] = ["read", "write"], cacheSize: Int = 100) -> String {
        """
        listen: "127.0.0.1:0"
        cacheSize: \(cacheSize)
        credentials:
          partner:
            type: oauth2
            tokenUrl: "\(sts.tokenURL)"
            clientId: partner-app
            secret: partner-secret
            scope: basic
            tokenWait: 3s
        routes:
          - host: "api.test"
            upstream: "\(sts.backendURL)"
            credential: partner
            scopeHeader: Token-Sidecar-Scope
            allowedScopes: [\(scopes.joined(separator: ", "))]
            audienceHeader: Token-Sidecar-Audience
            allowedAudiences: ["https://a.example", "https://b.example"]
        """
    }

    private func get(_ client: RawClient, scope: String? = nil, audience: String? = nil) throws -> TestResponse {
        var head = "GET /data HTTP/1.1\r\nHost: api.test\r\n"
        if let scope { head += "Token-Sidecar-Scope: \(scope)\r\n" }
        if let audience { head += "token-sidecar-audience: \(audience)\r\n" }
        client.send(head + "\r\n")
        return try client.readResponse()
    }

    private func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    func testEachScopeSetIsOneTokenRequestedWithExactlyItsScopeAndReused() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        for _ in 0..<3 {
            XCTAssertEqual(json(try get(client, scope: "read"))["scope"] as? String, "read")
            XCTAssertEqual(json(try get(client, scope: "write read"))["scope"] as? String, "read write")
            XCTAssertEqual(json(try get(client, scope: "read  write read"))["scope"] as? String, "read write", "order and duplicates ignored")
            XCTAssertEqual(json(try get(client))["scope"] as? String, "basic", "without the header: the credential's scope")
        }
        let requested = sts.tokenRequests().compactMap { $0["scope"] as? String }
        XCTAssertEqual(requested.sorted(), ["basic", "read", "read write"], "one token per set, each reused")
        let backend = sts.waitForBackendRequests(12)
        XCTAssertEqual(backend.count, 12)
        XCTAssertTrue(backend.allSatisfy { ($0["sidecar_headers"] as? [Any])?.isEmpty == true }, "the header never reaches the backend")
    }

    func testAScopeOutsideTheListIs403AndNoTokenIsRequested() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        let refused = try get(client, scope: "read admin")
        XCTAssertEqual(refused.status, 403)
        XCTAssertNotNil(refused.header("Proxy-Status"))
        XCTAssertEqual(json(refused)["refused_scope"] as? String, "admin")
        XCTAssertEqual(try get(client, audience: "https://evil.example").status, 403)
        XCTAssertEqual(sts.tokenRequests().count, 0, "nothing outside allowedScopes is ever requested")
        XCTAssertEqual(sts.backendRequests().count, 0)
    }

    func testTheAudienceIsChosenPerRequest() throws {
        let sts = try STSServer(policy: Self.client)
        let proxy = try ProxyHarness(yaml: yaml(sts))
        let client = try RawClient(port: proxy.port)
        XCTAssertEqual(json(try get(client, audience: "https://a.example"))["aud"] as? String, "https://a.example")
        XCTAssertEqual(json(try get(client, audience: "https://b.example"))["aud"] as? String, "https://b.example")
        XCTAssertEqual(json(try get(client, audience: "https://a.example"))["aud"] as? String, "https://a.example")
        XCTAssertEqual(sts.tokenRequests().count, 2)
    }

    func testFiveHundredSetsKeepAtMostCacheSizeTokensAndAreAllServed() throws {
        let sts = try STSServer(policy: Self.client)
        let scopes = (1...20).map { String(format: "s%02d", $0) }
        let proxy = try ProxyHarness(yaml: yaml(sts, scopes: scopes, cacheSize: 100))
        let client = try RawClient(port: proxy.port)
        let variants = try XCTUnwrap(proxy.runtime.credentials.routeVariants.values.first)
        var expected: [String] = []
        for index in 1...500 {
            // A distinct subset per request: the bits of the request's number.
            let set = scopes.enumerated().filter { index & (1 << $0.offset) != 0 }.map(\.element)
            let response = try get(client, scope: set.reversed().joined(separator: " "))
            XCTAssertEqual(response.status, 200, "request \(index)")
            expected.append(set.joined(separator: " "))
            XCTAssertLessThanOrEqual(variants.count, 100, "tokens held stay within cacheSize")
        }
        let requested = sts.tokenRequests().compactMap { $0["scope"] as? String }
        XCTAssertEqual(requested, expected, "each set requested once, with exactly its scope string")
        XCTAssertLessThanOrEqual(variants.count, 100)
        XCTAssertEqual(variants.droppedCount, 500 - variants.count)
    }
}

// MARK: - the verifying STS itself (was STSServerSelfTests.swift)

/// The verifying STS must refuse what a real one refuses, or every token-exchange test could
/// pass for the wrong reason: its own self-test (Fixtures/sts_server_selftest.py: signatures,
/// expiry, issuer, audience, client authentication, logs without raw tokens) runs here so CI
/// runs it, and the Swift wrapper is exercised once end to end.
final class STSServerSelfTests: XCTestCase {
    func testTheVerifyingSTSAcceptsGoodAndRefusesBadExchanges() throws {
        try assertFixtureSelfTestPasses("sts_server_selftest.py")
    }

    func testTheWrapperMintsExchangesAndReadsBothLogs() throws {
        let sts = try STSServer(policy: ["client_auth": "client_secret_post", "client_id": "app", "client_secret": "s3cret",
                                         "allowed_audiences": ["https://api.test"]])
        XCTAssertNotEqual(sts.port, sts.backendPort)
        let subject = try sts.mint(subject: "alice", ttl: 300)
        let exchanged = try Curl.run(["--data-urlencode", "grant_type=\(STSServer.grantType)",
                                      "--data-urlencode", "subject_token=\(subject)",
                                      "--data-urlencode", "subject_token_type=\(STSServer.jwtTokenType)",
                                      "--data-urlencode", "audience=https://api.test",
                                      "--data-urlencode", "scope=read write",
                                      "--data-urlencode", "client_id=app", "--data-urlencode", "client_secret=s3cret",
                                      sts.tokenURL])
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(exchanged.out.utf8)) as? [String: Any],
                                     exchanged.out + exchanged.err)
        let token = try XCTUnwrap(document["access_token"] as? String, exchanged.out)
        XCTAssertEqual(document["issued_token_type"] as? String, STSServer.accessTokenType)
        XCTAssertEqual(document["token_type"] as? String, "Bearer")

        let answer = try Curl.run(["-H", "Authorization: Bearer \(token)", "-H", "Token-Sidecar-Probe: 1",
                                   "\(sts.backendURL)/data"])
        let seen = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.out.utf8)) as? [String: Any],
                                 answer.out + answer.err)
        XCTAssertEqual(seen["sub"] as? String, "alice")
        XCTAssertEqual(seen["aud"] as? String, "https://api.test")
        XCTAssertEqual(seen["scope"] as? String, "read write")
        XCTAssertEqual(seen["path"] as? String, "/data")

        let tokenLog = sts.waitForTokenRequests(1)
        XCTAssertEqual(tokenLog.first?["verdict"] as? String, "ok")
        XCTAssertEqual(tokenLog.first?["sub"] as? String, "alice")
        let backendLog = sts.waitForBackendRequests(1)
        XCTAssertEqual(backendLog.first?["known"] as? Bool, true)
        XCTAssertEqual(backendLog.first?["authorization_scheme"] as? String, "Bearer")
        XCTAssertEqual(backendLog.first?["sidecar_headers"] as? [[String]], [["Token-Sidecar-Probe", "1"]])

        XCTAssertThrowsError(try sts.mint(subject: "bob", ttl: 60, kind: "nonsense"))
        for name in ["token_requests.jsonl", "backend_requests.jsonl"] {
            let text = try String(contentsOf: sts.fixture.file(name), encoding: .utf8)
            XCTAssertFalse(text.contains(subject), name)
            XCTAssertFalse(text.contains(token), name)
            XCTAssertFalse(text.contains("s3cret"), name)
        }
    }
}
