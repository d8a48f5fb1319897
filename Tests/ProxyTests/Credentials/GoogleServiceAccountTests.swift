import Foundation
import TestSupport
import XCTest

/// `type: google_service_account`: a Google-style key file against a stand-in `token_uri` that
/// verifies the assertion as Google does (RS256 with the key's id, `iss` the client email,
/// `aud` the token URI, the `scope` or `target_audience` claim, no `sub`).
final class GoogleServiceAccountTests: XCTestCase {
    private func keyFile(_ keys: TestKeys, tokenURI: String, email: String = "svc@project.iam.gserviceaccount.com") throws -> String {
        let object: [String: Any] = [
            "type": "service_account", "project_id": "project", "private_key_id": "kid-1",
            "private_key": String(decoding: try keys.bytes("sa.key"), as: UTF8.self), "client_email": email,
            "client_id": "1234", "token_uri": tokenURI,
        ]
        let path = keys.path("sa.json")
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A proxy whose route's credential is the key file at `keyFile`, asking for `asking`.
    private func proxy(keyFile: String, asking: String, backend: Backend) throws -> ProxyHarness {
        try ProxyHarness(yaml: ClientAuthHarness.yaml("""
            type: google_service_account
            keyFile: "\(keyFile)"
            \(asking)
            """, backend: backend))
    }

    /// An RSA key and a stand-in token URI that verifies Google's assertion with `claims`.
    private func googleServer(_ claims: [String: Any]) throws -> (keys: TestKeys, server: ClientAuthServer, tokenURI: String) {
        let keys = try TestKeys()
        try keys.make("sa", rsa: true)
        let server = try ClientAuthServer(policy: [:])
        let tokenURI = "http://127.0.0.1:\(server.port)/token"
        try server.setPolicy(["method": "google", "public_key": keys.path("sa.pub"), "kid": "kid-1",
                              "issuer": "svc@project.iam.gserviceaccount.com", "audience": tokenURI].merging(claims) { $1 })
        return (keys, server, tokenURI)
    }

    func testAnAccessTokenForAScopeAndTheKeyFileReReadWhenItChanges() throws {
        let (keys, server, tokenURI) = try googleServer(["scope": "https://www.googleapis.com/auth/cloud-platform", "expires_in": 2])
        let path = try keyFile(keys, tokenURI: tokenURI)
        let backend = try Backend()
        let proxy = try proxy(keyFile: path, asking: "scope: \"https://www.googleapis.com/auth/cloud-platform\"", backend: backend)
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"])
        XCTAssertEqual(server.verdicts().first, "ok", "\(server.verdicts())")
        let form = ClientAuthHarness.form(try XCTUnwrap(server.requests().first))
        XCTAssertEqual(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer")
        XCTAssertNil(form["client_id"])
        // A rotated key file (another account) is read for the next fetch (the token lives 2 s).
        try server.setPolicy(["method": "google", "public_key": keys.path("sa.pub"), "kid": "kid-1",
                              "issuer": "other@project.iam.gserviceaccount.com", "audience": tokenURI,
                              "scope": "https://www.googleapis.com/auth/cloud-platform", "expires_in": 2])
        Thread.sleep(forTimeInterval: 1.1)  // a new modification time the file watch sees
        _ = try keyFile(keys, tokenURI: tokenURI, email: "other@project.iam.gserviceaccount.com")
        let deadline = Date().addingTimeInterval(10)
        while !server.verdicts().dropFirst().contains("ok") && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertTrue(server.verdicts().dropFirst().contains("ok"), "the new key file was used: \(server.verdicts())")
    }

    func testAnIDTokenForATargetAudience() throws {
        let (keys, server, tokenURI) = try googleServer(["target_audience": "https://service-abc.a.run.app"])
        let backend = try Backend()
        let proxy = try proxy(keyFile: try keyFile(keys, tokenURI: tokenURI), asking: "targetAudience: \"https://service-abc.a.run.app\"",
                              backend: backend)
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        XCTAssertEqual(server.verdicts(), ["ok"])
        XCTAssertEqual(Backend.headerValues(try XCTUnwrap(backend.requests().first), "Authorization"), ["Bearer tok-1"],
                       "the answer's id_token is the token")
    }
}
