import Foundation
import TestSupport
import XCTest

/// `grant: jwt_bearer` (RFC 7523 §2.1) against a token server that verifies the assertion with
/// the public key (RS256 and ES256) and its claims, and the client authentication beside it.
final class JWTBearerGrantTests: XCTestCase {
    private func tokenURL(_ server: ClientAuthServer) -> String { "http://127.0.0.1:\(server.port)/oauth/token" }

    /// A proxy whose credential `svc-a` (no client authentication) signs with `key`.
    private func proxy(_ server: ClientAuthServer, key: String, backend: Backend, extra: String = "") throws -> ProxyHarness {
        try ProxyHarness(yaml: ClientAuthHarness.yaml("""
            type: oauth2
            tokenUrl: "\(tokenURL(server))"
            clientId: "svc-a"
            auth: none
            grant: jwt_bearer
            signingKeyFile: "\(key)"
            \(extra)
            """, backend: backend))
    }

    func testRS256WithoutClientAuthenticationNamesItsSubjectAndScope() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: true)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "jwt_bearer", "client_auth": "none", "client_id": "svc-a", "public_key": keys.path("client.pub"),
                              "issuer": "svc-a", "subject": "user@example.com", "audience": tokenURL(server), "scope": "read write",
                              "expires_in": 2])
        let backend = try Backend()
        let proxy = try proxy(server, key: keys.path("client.key"), backend: backend, extra: """
            assertionSubject: "user@example.com"
            scope: "read write"
            """)
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
        // The token lives 2 s: the refresh signs a new assertion (a jti is never repeated).
        let requests = server.waitForRequests(2)
        XCTAssertGreaterThanOrEqual(requests.count, 2)
        XCTAssertEqual(Set(server.verdicts()), ["ok"], "\(server.verdicts())")
        let form = ClientAuthHarness.form(try XCTUnwrap(requests.first))
        XCTAssertEqual(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer")
        XCTAssertEqual(form["client_id"], "svc-a")
        let assertion = try XCTUnwrap(form["assertion"])
        XCTAssertEqual(ClientAuthHarness.header(assertion)["alg"] as? String, "RS256")
        let claims = ClientAuthHarness.claims(assertion)
        XCTAssertEqual(claims["sub"] as? String, "user@example.com")
        XCTAssertEqual((claims["exp"] as? Int).flatMap { exp in (claims["iat"] as? Int).map { exp - $0 } }, 60)
    }

    func testES256WithBasicClientAuthenticationAndTheClientAsSubject() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: false)
        let server = try ClientAuthServer(policy: [:])
        try server.setPolicy(["method": "jwt_bearer", "client_auth": "basic", "client_id": "svc-b", "secret": "s3cret",
                              "public_key": keys.path("client.pub"), "issuer": "svc-b", "subject": "svc-b",
                              "audience": "https://idp.example/token", "kid": "k1"])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml("""
            type: oauth2
            tokenUrl: "\(tokenURL(server))"
            clientId: "svc-b"
            secret: "s3cret"
            grant: jwt_bearer
            signingKeyFile: "\(keys.path("client.key"))"
            signingKeyId: k1
            assertionAudience: "https://idp.example/token"
            """, backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(server.verdicts(), ["ok"])
        let assertion = ClientAuthHarness.form(try XCTUnwrap(server.requests().first))["assertion"] ?? ""
        XCTAssertEqual(ClientAuthHarness.header(assertion)["alg"] as? String, "ES256")
    }

    func testAWrongKeyIsRefusedByTheServerAndTheRequestGets503() throws {
        let keys = try TestKeys()
        try keys.make("client", rsa: true)
        try keys.make("other", rsa: true)
        let server = try ClientAuthServer(policy: ["method": "jwt_bearer", "client_auth": "none", "client_id": "svc-a", "public_key": keys.path("other.pub"),
                                                   "issuer": "svc-a", "subject": "svc-a"])
        let backend = try Backend()
        let proxy = try proxy(server, key: keys.path("client.key"), backend: backend)
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 503)
        XCTAssertTrue(server.verdicts().allSatisfy { $0 == "bad signature" || $0.contains("signature") }, "\(server.verdicts())")
        XCTAssertTrue(backend.requests().isEmpty, "nothing forwarded without a token")
    }
}
