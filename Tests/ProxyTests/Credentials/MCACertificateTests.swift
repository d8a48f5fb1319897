import Config
import Credentials
import Foundation
import Logging
import Proxy
import TestSupport
import XCTest

/// The MCA certificate flow (`type: mca`, `auth: certificate`): `Authorization: IMFCert <JWS>`,
/// an RS256 JWS with the certificate in `x5c` over `{"timestamp":…}`, verified by the server
/// against the certificate and its CA.
final class MCACertificateTests: XCTestCase {
    private func credential(_ server: ClientAuthServer, cert: String, key: String, clientId: String? = nil) -> String {
        """
        type: mca
        serverUrl: "http://127.0.0.1:\(server.port)/imf-authserver"
        tenantId: "tenant-1"
        auth: certificate
        clientCert: "\(cert)"
        clientKey: "\(key)"
        \(clientId.map { "clientId: \($0)" } ?? "")
        """
    }

    private let path = "/imf-authserver/authorization/v1/apps/tenant-1/token"

    func testTheIMFCertAssertionIsVerifiedAndTheClientIdIsTheCertificateCN() throws {
        let ca = try TestCA()
        try ca.issueClient(name: "mca1", commonName: "mca-client", rsa: true)
        try ca.issueClient(name: "mca2", commonName: "mca-client-2", rsa: true)
        let volume = try ProjectedVolume()
        try volume.publish(["cert.pem": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("mca1.pem")))),
                            "key.pem": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("mca1.key"))))])
        let policy: [String: Any] = ["method": "mca_certificate", "mca_path": path, "trusted_ca": ca.caCert, "expires_in": 2]
        let server = try ClientAuthServer(policy: policy.merging(["client_id": "mca-client"]) { $1 })
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(
            credential(server, cert: volume.path("cert.pem"), key: volume.path("key.pem")), backend: backend))
        XCTAssertEqual(try ClientAuthHarness.get(proxy).status, 200)
        let first = try XCTUnwrap(server.requests().first)
        XCTAssertEqual(first["verdict"] as? String, "ok")
        XCTAssertEqual(first["path"] as? String, path)
        XCTAssertEqual(ClientAuthHarness.form(first), ["grant_type": "client_credentials", "client_id": "mca-client"])
        let authorization = (first["headers"] as? [[String]] ?? []).first { $0.first?.lowercased() == "authorization" }?.last ?? ""
        XCTAssertTrue(authorization.hasPrefix("IMFCert "), authorization)
        let jws = String(authorization.dropFirst("IMFCert ".count))
        XCTAssertEqual(ClientAuthHarness.header(jws)["alg"] as? String, "RS256")
        XCTAssertEqual((ClientAuthHarness.header(jws)["x5c"] as? [String])?.count, 1)
        XCTAssertNotNil(ClientAuthHarness.claims(jws)["timestamp"] as? Int)

        // Certificate and key swapped together: the next fetch presents the new certificate.
        try volume.publish(["cert.pem": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("mca2.pem")))),
                            "key.pem": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("mca2.key"))))])
        try server.setPolicy(policy.merging(["client_id": "mca-client-2"]) { $1 })
        let requests = server.waitForRequests(2)
        XCTAssertEqual(requests.count >= 2 ? requests[1]["verdict"] as? String : nil, "ok")
        XCTAssertEqual(requests.count >= 2 ? ClientAuthHarness.form(requests[1])["client_id"] : nil, "mca-client-2")
    }

    func testACertificateFromAnotherCAIsRefused() throws {
        let ca = try TestCA()
        let stranger = try TestCA()
        try stranger.issueClient(name: "mca", commonName: "mca-client", rsa: true)
        let server = try ClientAuthServer(policy: ["method": "mca_certificate", "mca_path": path, "trusted_ca": ca.caCert,
                                                   "client_id": "mca-client"])
        let backend = try Backend()
        let proxy = try ProxyHarness(yaml: ClientAuthHarness.yaml(
            credential(server, cert: stranger.path("mca.pem"), key: stranger.path("mca.key")), backend: backend))
        try ClientAuthHarness.assertUnavailable(proxy)
        XCTAssertTrue((ClientAuthHarness.lastError(proxy) ?? "").contains("invalid_client"))
        XCTAssertFalse(server.verdicts().contains("ok"))
    }

    func testAnECKeyOrAKeyOfAnotherCertificateStopsStartUp() throws {
        let ca = try TestCA()
        try ca.issueClient(name: "ec", commonName: "mca-client")
        try ca.issueClient(name: "rsa1", commonName: "mca-client", rsa: true)
        try ca.issueClient(name: "rsa2", commonName: "mca-client", rsa: true)
        let server = try ClientAuthServer(policy: ["method": "mca_certificate"])
        let backend = try Backend()
        for (cert, key, expected) in [("ec.pem", "ec.key", "RSA"), ("rsa1.pem", "rsa2.key", "not the key of clientCert")] {
            let yaml = ClientAuthHarness.yaml(credential(server, cert: ca.path(cert), key: ca.path(key)), backend: backend)
            XCTAssertThrowsError(try ProxyHarness(yaml: yaml)) { error in
                XCTAssertTrue("\(error)".contains("credential 'flow'") && "\(error)".contains(expected), "\(error)")
            }
        }
        XCTAssertEqual(server.requests().count, 0)
    }
}
