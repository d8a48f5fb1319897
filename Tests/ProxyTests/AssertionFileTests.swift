import Foundation
import XCTest

/// `auth: assertion_file`: a JWT issued by someone else (here: a Kubernetes-style issuer key),
/// read from a projected volume before every fetch and sent verbatim as `client_assertion`.
final class AssertionFileTests: XCTestCase {
    private let issuer = "https://kubernetes.default.svc"
    private let subject = "system:serviceaccount:payments:checkout"

    private func serviceAccountToken(_ keys: TestKeys, expiresIn: TimeInterval, audience: String = "sts.example") throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        return try keys.jwt(signedBy: "issuer", claims: [
            "iss": issuer, "sub": subject, "aud": [audience], "iat": now, "nbf": now, "exp": now + Int(expiresIn),
        ], keyId: "k8s-signing-key")
    }

    private func credential(_ server: ClientAuthServer, file: String) -> String {
        """
        type: oauth2
        tokenUrl: "http://127.0.0.1:\(server.port)/oauth/token"
        clientId: "checkout"
        auth: assertion_file
        assertionFile: "\(file)"
        """
    }

    private func policy(_ keys: TestKeys, expiresIn: Int = 3600) -> [String: Any] {
        ["method": "assertion_file", "client_id": "checkout", "public_key": keys.path("issuer.pub"), "audience": "sts.example",
         "issuer": issuer, "subject": subject, "expires_in": expiresIn]
    }

    func testAProjectedTokenIsSentVerbatimAndReReadAfterASymlinkSwap() throws {
        let keys = try TestKeys()
        try keys.make("issuer", rsa: true)
        let volume = try ProjectedVolume()
        let first = try serviceAccountToken(keys, expiresIn: 3600)
        try volume.publish(text: ["token": first + "\n"])
        let server = try ClientAuthServer(policy: policy(keys, expiresIn: 2))
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, file: volume.path("token")), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        let sent = ClientAuthHarness.form(try XCTUnwrap(server.requests().first))
        XCTAssertEqual(sent["client_assertion"], first, "sent verbatim (without the trailing newline)")
        XCTAssertEqual(sent["client_assertion_type"], "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        XCTAssertEqual(sent["client_id"], "checkout")

        // The kubelet renews the token: the next fetch (the 2 s token's refresh) sends the new one.
        Thread.sleep(forTimeInterval: 1.1)  // a different iat, so a different token
        let renewed = try serviceAccountToken(keys, expiresIn: 3600)
        XCTAssertNotEqual(renewed, first)
        try volume.publish(text: ["token": renewed])
        let requests = server.waitForRequests(2)
        XCTAssertEqual(requests.count >= 2 ? ClientAuthHarness.form(requests[1])["client_assertion"] : nil, renewed)
        XCTAssertEqual(Set(server.verdicts()), ["ok"])
    }

    func testAnExpiredAssertionIsNotSentAndTheErrorNamesTheFile() throws {
        let keys = try TestKeys()
        try keys.make("issuer", rsa: true)
        let volume = try ProjectedVolume()
        try volume.publish(text: ["token": try serviceAccountToken(keys, expiresIn: -30)])
        let server = try ClientAuthServer(policy: policy(keys))
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, file: volume.path("token")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        let error = try XCTUnwrap(ClientAuthHarness.lastError(proxy))
        XCTAssertTrue(error.contains(volume.path("token")) && error.contains("expired"), error)
        XCTAssertEqual(server.requests().count, 0, "an assertion the server must refuse is not sent")

        // Renewed: the retry after the backoff succeeds, with no restart.
        try volume.publish(text: ["token": try serviceAccountToken(keys, expiresIn: 3600)])
        let deadline = Date().addingTimeInterval(10)
        var status = 0
        while Date() < deadline && status != 200 {
            status = try ClientAuthHarness.get(proxy).status
        }
        XCTAssertEqual(status, 200)
        XCTAssertEqual(server.verdicts().last, "ok")
    }

    func testAMissingOrEmptyFileFailsTheFetchNamingTheFile() throws {
        let keys = try TestKeys()
        try keys.make("issuer", rsa: true)
        let volume = try ProjectedVolume()
        let server = try ClientAuthServer(policy: policy(keys))
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, file: volume.path("token")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        let missing = try XCTUnwrap(ClientAuthHarness.lastError(proxy))
        XCTAssertTrue(missing.contains("assertionFile \(volume.path("token"))") && missing.contains("does not exist"), missing)

        try volume.publish(text: ["token": "\n"])
        let deadline = Date().addingTimeInterval(8)
        var error = missing
        while Date() < deadline && !error.contains("is empty") {
            Thread.sleep(forTimeInterval: 0.1)
            error = ClientAuthHarness.lastError(proxy) ?? ""
        }
        XCTAssertTrue(error.contains("is empty"), error)
        XCTAssertEqual(server.requests().count, 0)
    }

    func testAnAssertionFromAnUntrustedIssuerIsRefusedByTheServer() throws {
        let keys = try TestKeys()
        try keys.make("issuer", rsa: true)
        try keys.make("impostor", rsa: false)
        let volume = try ProjectedVolume()
        let now = Int(Date().timeIntervalSince1970)
        try volume.publish(text: ["token": try keys.jwt(signedBy: "impostor", claims: [
            "iss": issuer, "sub": subject, "aud": "sts.example", "exp": now + 600,
        ])])
        let server = try ClientAuthServer(policy: policy(keys))
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(credential(server, file: volume.path("token")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        XCTAssertTrue((ClientAuthHarness.lastError(proxy) ?? "").contains("invalid_client"))
        XCTAssertFalse(server.verdicts().isEmpty)
        XCTAssertFalse(server.verdicts().contains("ok"))
    }
}
