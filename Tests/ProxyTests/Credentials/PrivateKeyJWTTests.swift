import Foundation
import TestSupport
import XCTest

/// `auth: private_key_jwt` and `auth: client_secret_jwt` against an authorization server that
/// verifies the assertion's signature, claims and `jti`, and refuses anything else.
final class PrivateKeyJWTTests: XCTestCase {
    private func tokenURL(_ server: ClientAuthServer) -> String { "http://127.0.0.1:\(server.port)/oauth/token" }

    private func credential(_ server: ClientAuthServer, keyFile: String, extra: String = "") -> String {
        """
        type: oauth2
        tokenUrl: "\(tokenURL(server))"
        clientId: "svc-a"
        auth: private_key_jwt
        signingKeyFile: "\(keyFile)"
        \(extra)
        """
    }

    func testRS256AssertionIsVerifiedAndEveryFetchSignsAFreshOne() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: true)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "private_key_jwt", "client_id": "svc-a", "public_key": keys.path("client.pub"),
                              "audience": tokenURL(server), "lifetime": 60, "expires_in": 2])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: keys.path("client.key")), backend: backend))

        let response = try ClientAuthHarness.get(proxy)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
        // The token lives 2 s: the refresh at 80 % is a second fetch with a new assertion.
        let requests = server.waitForRequests(2)
        XCTAssertGreaterThanOrEqual(requests.count, 2)
        XCTAssertEqual(Set(server.verdicts()), ["ok"], "every assertion verified: \(server.verdicts())")
        let assertions = requests.map { ClientAuthHarness.form($0)["client_assertion"] ?? "" }
        let jtis = assertions.map { ClientAuthHarness.claims($0)["jti"] as? String ?? "" }
        XCTAssertEqual(Set(jtis).count, jtis.count, "a jti is never repeated")
        XCTAssertTrue(jtis.allSatisfy { $0.count >= 22 }, "at least 128 random bits")
        let first = try XCTUnwrap(assertions.first)
        XCTAssertEqual(ClientAuthHarness.header(first)["alg"] as? String, "RS256")
        XCTAssertEqual(ClientAuthHarness.header(first)["typ"] as? String, "JWT")
        XCTAssertNil(ClientAuthHarness.header(first)["kid"])
        let claims = ClientAuthHarness.claims(first)
        XCTAssertEqual(claims["iss"] as? String, "svc-a")
        XCTAssertEqual(claims["sub"] as? String, "svc-a")
        XCTAssertEqual(claims["aud"] as? String, tokenURL(server), "the audience defaults to the tokenUrl")
        let form = ClientAuthHarness.form(try XCTUnwrap(requests.first))
        XCTAssertEqual(form["client_id"], "svc-a")
        XCTAssertEqual(form["client_assertion_type"], "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        XCTAssertNil(form["client_secret"])
        let headers = (requests.first?["headers"] as? [[String]] ?? []).map { $0.first?.lowercased() ?? "" }
        XCTAssertFalse(headers.contains("authorization"), "no Authorization header on the token request")
    }

    func testES256FromATraditionalKeyWithKeyIdAudienceAndLifetime() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: false, traditional: true)
        XCTAssertTrue(String(decoding: try keys.bytes("client.key"), as: UTF8.self).contains("BEGIN EC PRIVATE KEY"))
        let server = try ClientAuthServer(policy: ["method": "private_key_jwt", "client_id": "svc-a", "public_key": keys.path("client.pub"),
                                                   "audience": "https://idp.example/", "kid": "key-2026", "lifetime": 120])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: keys.path("client.key"), extra: """
            signingKeyId: key-2026
            assertionAudience: "https://idp.example/"
            assertionLifetime: 2m
            """), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(server.verdicts(), ["ok"])
        let assertion = ClientAuthHarness.form(try XCTUnwrap(server.requests().first))["client_assertion"] ?? ""
        XCTAssertEqual(ClientAuthHarness.header(assertion)["alg"] as? String, "ES256")
        XCTAssertEqual(assertion.split(separator: ".").last.map { Data(base64URL: String($0))?.count }, 64,
                       "an ES256 signature is the raw 64-byte r||s, not DER")
    }

    func testAWrongKeyFailsTheFetchClearlyAndRequestsGet503() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: true)
        try keys.make("other", rsa: true)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "private_key_jwt", "client_id": "svc-a", "public_key": keys.path("other.pub"),
                              "audience": tokenURL(server)])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: keys.path("client.key")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        let error = try XCTUnwrap(ClientAuthHarness.lastError(proxy))
        XCTAssertTrue(error.contains("400") && error.contains("invalid_client"), error)
        XCTAssertTrue(server.verdicts().allSatisfy { $0.contains("signature") }, "\(server.verdicts())")
        XCTAssertEqual(backend.requests().count, 0)
    }

    func testAReplayedAssertionIsRefusedByItsJTI() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: true)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "private_key_jwt", "client_id": "svc-a", "public_key": keys.path("client.pub"),
                              "audience": tokenURL(server)])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: keys.path("client.key")), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        // Someone who captured the token request sends it again: the server refuses the jti.
        let captured = try XCTUnwrap(server.requests().first)
        let body = try XCTUnwrap(captured["body"] as? String)
        let replay = try RawClient(port: server.port)
        replay.send("POST /oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        let answer = try replay.readResponse()
        XCTAssertEqual(answer.status, 400)
        XCTAssertEqual(answer.json?["error"] as? String, "invalid_client")
        XCTAssertEqual(server.verdicts().last, "jti replayed")
    }

    func testAnAssertionAnAttackerReplayedFirstFailsTheFetchAnd503() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: false)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "private_key_jwt", "client_id": "svc-a", "public_key": keys.path("client.pub"),
                              "audience": tokenURL(server), "attacker_replays_first": true])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: keys.path("client.key")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        let error = try XCTUnwrap(ClientAuthHarness.lastError(proxy))
        XCTAssertTrue(error.contains("invalid_client") && error.contains("jti replayed"), error)
        let verdicts = server.verdicts()
        XCTAssertEqual(verdicts.first, "attacker: ok", "the captured assertion worked once, for whoever sent it first")
        XCTAssertEqual(verdicts.dropFirst().first, "jti replayed")
        XCTAssertEqual(backend.requests().count, 0)
    }

    func testARotatedKeyIsUsedByTheNextFetchWithoutARestart() throws {
        let keys = try TestKeys()
        try keys.make("v1", rsa: true)
        try keys.make("v2", rsa: false)
        let volume = try ProjectedVolume()
        try volume.publish(["signing.key": try keys.bytes("v1.key")])
        let server = try ClientAuthServer(policy: [:])
        let policy: [String: Any] = ["method": "private_key_jwt", "client_id": "svc-a", "audience": tokenURL(server), "expires_in": 2]
        try server.setPolicy(policy.merging(["public_key": keys.path("v1.pub")]) { $1 })
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, keyFile: volume.path("signing.key")), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(server.verdicts(), ["ok"])

        // The key is rotated (RSA → EC) and the server now trusts only the new one.
        try volume.publish(["signing.key": try keys.bytes("v2.key")])
        try server.setPolicy(policy.merging(["public_key": keys.path("v2.pub")]) { $1 })
        let requests = server.waitForRequests(2)
        XCTAssertEqual(server.verdicts().prefix(2), ["ok", "ok"], "the next fetch signs with the new key: \(server.verdicts())")
        let second = ClientAuthHarness.form(requests[1])["client_assertion"] ?? ""
        XCTAssertEqual(ClientAuthHarness.header(second)["alg"] as? String, "ES256")
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
    }

    func testClientSecretJWTSignsHS256WithTheSecret() throws {
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "client_secret_jwt", "client_id": "svc-b", "secret": "SENTINEL-HMAC-SECRET-0123456789abcdef",
                              "audience": tokenURL(server)])
        let backend = try Backend()
        let yaml = ClientAuthHarness.yaml("""
            type: oauth2
            tokenUrl: "\(tokenURL(server))"
            clientId: "svc-b"
            auth: client_secret_jwt
            secret: "SENTINEL-HMAC-SECRET-0123456789abcdef"
            """, backend: backend)
        let proxy = try ProxyHarness(yaml: yaml)
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(server.verdicts(), ["ok"])
        let request = try XCTUnwrap(server.requests().first)
        XCTAssertEqual(ClientAuthHarness.header(ClientAuthHarness.form(request)["client_assertion"] ?? "")["alg"] as? String, "HS256")
        XCTAssertFalse("\(request)".contains("SENTINEL"), "the secret itself is never sent")

        // A server that holds a different secret refuses the assertion.
        try server.setPolicy(["method": "client_secret_jwt", "client_id": "svc-b", "secret": "another-secret-entirely-0000000000",
                              "audience": tokenURL(server)])
        let second = try ProxyHarness(yaml: yaml)
        try ClientAuthHarness.assertUnavailable(second)
        XCTAssertTrue(server.verdicts().dropFirst().allSatisfy { $0.contains("signature") }, "\(server.verdicts())")
    }
}

extension Data {
    /// Decodes unpadded base64url (test side).
    init?(base64URL text: String) {
        var text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        self.init(base64Encoded: text)
    }

    /// The verifying authorization server (Fixtures/client_auth_server.py, which every
    /// client-authentication test uses) must refuse what a real one refuses, or those tests
    /// could pass for the wrong reason: its self-test (87 cases, bad signatures, claims,
    /// replays, certificates) runs with them.
    func testTheVerifyingServerAcceptsGoodAndRefusesBadClientAuthentication() throws {
        try assertFixtureSelfTestPasses("client_auth_server_selftest.py")
    }
}
