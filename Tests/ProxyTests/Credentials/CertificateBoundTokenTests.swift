import Foundation
import TestSupport
import TokenManager
import XCTest

/// Certificate-bound tokens (RFC 8705 §3) end to end: the authorization server binds each token to
/// the client certificate of its mutual-TLS handshake (`cnf.x5t#S256`), and the resource server,
/// over mutual TLS too, accepts a token only with that same certificate
/// (Fixtures/dpop_server.py, verifying independently of the code under test).
final class CertificateBoundTokenTests: XCTestCase {
    /// A credential authenticating with `cert`/`key` (`auth`) and a route presenting its
    /// certificate to the fixture's resource server.
    private func yaml(_ server: DPoPServer, ca: TestCA, auth: String, cert: String, key: String) -> String {
        """
        listen: "127.0.0.1:0"
        credentials:
          bank:
            type: oauth2
            tokenUrl: "\(server.tokenURL)"
            clientId: bank-client
            auth: \(auth)
            clientCert: "\(cert)"
            clientKey: "\(key)"
            caFile: "\(ca.caCert)"
            tokenWait: 3s
        routes:
          - host: "accounts.test"
            upstream: "\(server.backendURL)"
            caFile: "\(ca.caCert)"
            credential: bank
            clientCertificate: credential
        """
    }

    private func setUp(_ ca: TestCA, volume: ProjectedVolume) throws -> (DPoPServer, ProxyHarness) {
        let server = try DPoPServer(policy: ["client_id": "bank-client", "client_auth": "tls_client_auth",
                                             "tls_client_cn": "bank-client", "bind_certificate": true],
                                    tls: (ca.localhostCert, ca.localhostKey, ca.caCert))
        let proxy = try ProxyHarness(yaml: yaml(server, ca: ca, auth: "tls_client_auth", cert: volume.path("tls.crt"),
                                                key: volume.path("tls.key")))
        return (server, proxy)
    }

    private func publish(_ ca: TestCA, _ name: String, into volume: ProjectedVolume) throws {
        try volume.publish(["tls.crt": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("\(name).pem")))),
                            "tls.key": Array(try Data(contentsOf: URL(fileURLWithPath: ca.path("\(name).key"))))])
    }

    private func get(_ client: RawClient, _ path: String) throws -> TestResponse {
        client.send("GET \(path) HTTP/1.1\r\nHost: accounts.test\r\n\r\n")
        return try client.readResponse()
    }

    func testTheUpstreamSeesTheCertificateTheTokenIsBoundToAcrossARotation() throws {
        let ca = try TestCA()
        try ca.issueClient(name: "first", commonName: "bank-client")
        try ca.issueClient(name: "renewed", commonName: "bank-client")
        let volume = try ProjectedVolume()
        try publish(ca, "first", into: volume)
        let (server, proxy) = try setUp(ca, volume: volume)
        let client = try RawClient(port: proxy.port)
        for index in 0..<5 {
            let response = try get(client, "/before/\(index)")
            XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        }
        let firstToken = try XCTUnwrap(server.tokenRequests().last)
        let firstPrint = try XCTUnwrap(firstToken["peer_cert_x5t"] as? String)
        XCTAssertEqual((firstToken["cnf"] as? [String: Any])?["x5t#S256"] as? String, firstPrint, "the AS bound the token")

        try publish(ca, "renewed", into: volume)
        let during = try server.keepRequesting(client, host: "accounts.test", untilTokens: 2)
        for (index, response) in during.enumerated() {
            XCTAssertEqual(response.status, 200, "request \(index) across the rotation: \(String(decoding: response.body, as: UTF8.self))")
        }
        let tokens = server.tokenRequests()
        XCTAssertEqual(tokens.count, 2, "a token for the new certificate, fetched with it")
        let secondPrint = try XCTUnwrap(tokens.last?["peer_cert_x5t"] as? String)
        XCTAssertNotEqual(firstPrint, secondPrint)
        // The AS logs the token request before it answers, so the loop above can end while the
        // new token is still on its way: until it arrives, requests rightly go with the old token
        // and the old certificate. The claim below is about requests after the proxy holds it.
        let credential = try XCTUnwrap(proxy.runtime.credentials["bank"] as? ManagedCredential)
        XCTAssertTrue(eventually(timeout: .seconds(5)) { credential.status.certificateThumbprint == secondPrint },
                      "the proxy takes the token bound to the renewed certificate")
        for step in 0..<5 { XCTAssertEqual(try get(client, "/after/\(step)").status, 200) }
        let resource = server.resourceRequests()
        XCTAssertTrue(resource.allSatisfy { $0["verdict"] as? String == "ok" && $0["bound"] as? String == "mtls" },
                      "every request carried its token over a connection with its own certificate")
        XCTAssertTrue(resource.allSatisfy { $0["peer_cert_x5t"] as? String == $0["token_x5t"] as? String })
        XCTAssertTrue(resource.suffix(5).allSatisfy { $0["peer_cert_x5t"] as? String == secondPrint },
                      "after the new token, the new certificate")
        let status = credential.status
        XCTAssertEqual(status.certificateThumbprint, secondPrint)
        XCTAssertEqual(status.tokenType, "Bearer")
    }

    func testASelfSignedCertificateTheServerRegisteredWorksTheSameWay() throws {
        let ca = try TestCA()
        let directory = ca.directory
        let cert = directory.appendingPathComponent("self.pem").path
        let key = directory.appendingPathComponent("self.key").path
        _ = try Command.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=bank-self",
                             "-addext", "extendedKeyUsage=clientAuth"])
        // x5t#S256 computed by openssl and coreutils, not by the code under test.
        let print = try Command.run(["sh", "-c", "openssl x509 -in '\(cert)' -outform DER | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=\\n'"])
            .out.trimmingCharacters(in: .whitespacesAndNewlines)
        // The TLS layer accepts a self-signed certificate only from its bundle; the AS checks
        // it against the registered thumbprint (RFC 8705 §2.2).
        let bundle = directory.appendingPathComponent("bundle.pem").path
        try (String(contentsOfFile: ca.caCert, encoding: .utf8) + String(contentsOfFile: cert, encoding: .utf8))
            .write(toFile: bundle, atomically: true, encoding: .utf8)
        let server = try DPoPServer(policy: ["client_id": "bank-client", "client_auth": "self_signed_tls_client_auth",
                                             "tls_client_x5t": [print], "bind_certificate": true],
                                    tls: (ca.localhostCert, ca.localhostKey, bundle))
        let proxy = try ProxyHarness(yaml: yaml(server, ca: ca, auth: "self_signed_tls_client_auth", cert: cert, key: key))
        let client = try RawClient(port: proxy.port)
        for index in 0..<3 {
            let response = try get(client, "/self/\(index)")
            XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        }
        XCTAssertEqual(server.tokenRequests().last?["client_auth"] as? String, "self_signed_tls_client_auth")
        XCTAssertTrue(server.resourceRequests().allSatisfy { $0["token_x5t"] as? String == print && $0["peer_cert_x5t"] as? String == print })
    }
}
