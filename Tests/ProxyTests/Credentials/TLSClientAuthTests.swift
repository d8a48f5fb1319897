import Foundation
import TestSupport
import XCTest

/// `auth: tls_client_auth` (RFC 8705 §2): the client certificate of the TLS handshake to an
/// https token server authenticates; the form carries only `client_id`.
final class TLSClientAuthTests: XCTestCase {
    private func credential(_ server: ClientAuthServer, ca: TestCA, cert: String, key: String) -> String {
        """
        type: oauth2
        tokenUrl: "https://localhost:\(server.port)/oauth/token"
        clientId: "mtls-client"
        auth: tls_client_auth
        caFile: "\(ca.caCert)"
        clientCert: "\(cert)"
        clientKey: "\(key)"
        """
    }

    func testTheHandshakeCertificateAuthenticatesAndARotatedOneIsUsedNext() throws {
        let ca = try TestCA()
        try ca.issueClient(name: "client1", commonName: "mtls-client")
        try ca.issueClient(name: "client2", commonName: "mtls-client-renewed")
        let volume = try ProjectedVolume()
        try volume.publish(["tls.crt": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("client1.pem")))),
                            "tls.key": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("client1.key"))))])
        let policy: [String: Any] = ["method": "tls_client_auth", "client_id": "mtls-client", "expires_in": 2]
        let server = try ClientAuthServer(policy: policy.merging(["subject_cn": "mtls-client"]) { $1 },
                                          tlsCert: ca.localhostCert, tlsKey: ca.localhostKey, clientCA: ca.caCert)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(
            credential(server, ca: ca, cert: volume.path("tls.crt"), key: volume.path("tls.key")), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        let first = try XCTUnwrap(server.requests().first)
        XCTAssertEqual(first["verdict"] as? String, "ok")
        XCTAssertEqual(first["peer_cn"] as? String, "mtls-client")
        XCTAssertEqual(ClientAuthHarness.form(first), ["grant_type": "client_credentials", "client_id": "mtls-client"])

        // The certificate is renewed in place; the server now wants the new subject.
        try volume.publish(["tls.crt": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("client2.pem")))),
                            "tls.key": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("client2.key"))))])
        try server.setPolicy(policy.merging(["subject_cn": "mtls-client-renewed"]) { $1 })
        let requests = server.waitForRequests(2)
        XCTAssertEqual(requests.count >= 2 ? requests[1]["peer_cn"] as? String : nil, "mtls-client-renewed")
        XCTAssertEqual(requests.count >= 2 ? requests[1]["verdict"] as? String : nil, "ok")
    }

    func testACertificateTheServerDoesNotTrustGets503() throws {
        let ca = try TestCA()
        let stranger = try TestCA()
        try stranger.issueClient(name: "client", commonName: "mtls-client")
        let server = try ClientAuthServer(policy: ["method": "tls_client_auth", "client_id": "mtls-client", "subject_cn": "mtls-client"],
                                          tlsCert: ca.localhostCert, tlsKey: ca.localhostKey, clientCA: ca.caCert)
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(
            credential(server, ca: ca, cert: stranger.path("client.pem"), key: stranger.path("client.key")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        XCTAssertNotNil(ClientAuthHarness.lastError(proxy))
        XCTAssertFalse(server.verdicts().contains("ok"))
        XCTAssertEqual(backend.requests().count, 0)
    }
}
