import Config
import Foundation
import XCTest

/// The secretless and certificate flows: oauth2 `private_key_jwt`, `client_secret_jwt`,
/// `assertion_file`, `tls_client_auth`, mca `auth: certificate`, and `routes[].clientAuthorization`.
final class ConfigDecoderClientAuthTests: XCTestCase {
    private var keyFile = ""
    private var certFile = ""

    override func setUpWithError() throws {
        keyFile = try writeTemporaryFile(self, "client.key", FakePEM.key)
        certFile = try writeTemporaryFile(self, "client.pem", FakePEM.certificate)
    }

    private func oauth2(_ body: String, file: StaticString = #filePath, line: UInt = #line) -> OAuth2Config? {
        let yaml = "credentials:\n  p:\n    type: oauth2\n    tokenUrl: https://idp.test/token\n    clientId: svc\n" + body
        guard case .oauth2(let config) = parseOK(yaml, file: file, line: line)?.credentials.first?.kind else { return nil }
        return config
    }

    private func problems(_ body: String, tokenUrl: String = "https://idp.test/token") -> [String] {
        problemLines("credentials:\n  p:\n    type: oauth2\n    tokenUrl: \(tokenUrl)\n    clientId: svc\n" + body)
    }

    func testPrivateKeyJWTWithDefaultsAndWithEverySetting() throws {
        let plain = try XCTUnwrap(oauth2("    auth: private_key_jwt\n    signingKeyFile: \(keyFile)\n"))
        XCTAssertEqual(plain, OAuth2Config(
            tokenUrl: EndpointURL(scheme: "https", host: "idp.test", port: 443, path: "/token"), clientId: "svc", secret: nil,
            auth: .privateKeyJWT, assertion: JWTAssertionSettings(signingKeyFile: keyFile)))
        XCTAssertEqual(plain.assertion?.lifetime, .seconds(60), "assertionLifetime defaults to 60s")
        XCTAssertNil(plain.assertion?.audience, "the audience defaults to the tokenUrl")

        let full = try XCTUnwrap(oauth2("""
                auth: private_key_jwt
                signingKeyFile: \(keyFile)
                signingKeyId: key-1
                assertionAudience: https://idp.test/
                assertionLifetime: 5m

            """))
        XCTAssertEqual(full.assertion, JWTAssertionSettings(signingKeyFile: keyFile, keyId: "key-1", audience: "https://idp.test/",
                                                            lifetime: .seconds(300)))
    }

    func testPrivateKeyJWTProblems() throws {
        XCTAssertEqual(problems("    auth: private_key_jwt\n"), [
            "c.yaml: credentials.p.signingKeyFile: required key is missing: auth: private_key_jwt signs with this PEM private key (RSA for RS256, EC P-256 for ES256)",
        ])
        XCTAssertEqual(problems("    auth: private_key_jwt\n    signingKeyFile: \(keyFile)\n    secret: SENTINEL-S\n"), [
            "c.yaml: credentials.p.secret: auth: private_key_jwt uses no client secret; remove secret",
        ])
        XCTAssertEqual(problems("    auth: private_key_jwt\n    signingKeyFile: \(certFile)\n").count, 1)
        for lifetime in ["0s", "6m", "500ms"] {
            XCTAssertEqual(problems("    auth: private_key_jwt\n    signingKeyFile: \(keyFile)\n    assertionLifetime: \(lifetime)\n"), [
                "c.yaml: credentials.p.assertionLifetime: must be between 1s and 5m (an assertion is meant to be short-lived)",
            ], lifetime)
        }
        XCTAssertEqual(problems("    auth: private_key_jwt\n    signingKeyFile: \(keyFile)\n    signingKeyId: \"\"\n"), [
            "c.yaml: credentials.p.signingKeyId: is empty",
        ])
    }

    func testClientSecretJWT() throws {
        let config = try XCTUnwrap(oauth2("    auth: client_secret_jwt\n    secret: SENTINEL-S\n    signingKeyId: k\n"))
        XCTAssertEqual(config.secret, .inline("SENTINEL-S"))
        XCTAssertEqual(config.assertion, JWTAssertionSettings(keyId: "k"))
        XCTAssertEqual(problems("    auth: client_secret_jwt\n"), [
            "c.yaml: credentials.p: an oauth2 credential with auth: client_secret_jwt needs exactly one of secret, secretFile or secretEnv; none is given",
        ])
        let lines = problems("    auth: client_secret_jwt\n    secret: SENTINEL-S\n    signingKeyFile: \(keyFile)\n")
        XCTAssertEqual(lines, [
            "c.yaml: credentials.p.signingKeyFile: client_secret_jwt signs HS256 with the client secret; signingKeyFile is only used with auth: private_key_jwt",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
    }

    func testAssertionFileNeedsOnlyAPathThatMayNotExistYet() throws {
        let config = try XCTUnwrap(oauth2("    auth: assertion_file\n    assertionFile: /var/run/secrets/tokens/sidecar\n"))
        XCTAssertEqual(config.assertionFile, "/var/run/secrets/tokens/sidecar")
        XCTAssertNil(config.secret)
        XCTAssertNil(config.assertion)
        XCTAssertEqual(problems("    auth: assertion_file\n"), [
            "c.yaml: credentials.p.assertionFile: required key is missing: auth: assertion_file sends the JWT this file holds (e.g. a Kubernetes projected service-account token)",
        ])
        XCTAssertEqual(problems("    auth: assertion_file\n    assertionFile: \"\"\n"), [
            "c.yaml: credentials.p.assertionFile: is empty; expected the path of a file holding a JWT",
        ])
    }

    func testAssertionFileIsResolvedAgainstTheConfigDirectory() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("sidecar.yaml").path
        try """
        credentials:
          p:
            type: oauth2
            tokenUrl: https://idp.test/token
            clientId: svc
            auth: assertion_file
            assertionFile: tokens/sa
        """.write(toFile: path, atomically: true, encoding: .utf8)
        guard case .oauth2(let config) = try ConfigLoader.load(path: path, environment: [:]).credentials.first?.kind else {
            return XCTFail("no oauth2 credential")
        }
        XCTAssertEqual(config.assertionFile, directory.appendingPathComponent("tokens/sa").standardizedFileURL.path)
    }

    func testKeysOfOtherMethodsAreRefusedByName() {
        XCTAssertEqual(problems("    secret: s\n    signingKeyId: k\n    assertionFile: /x\n"), [
            "c.yaml: credentials.p.signingKeyId: is only used with auth: private_key_jwt or client_secret_jwt (auth is basic)",
            "c.yaml: credentials.p.assertionFile: is only used with auth: assertion_file (auth is basic)",
        ])
        XCTAssertEqual(problems("    auth: assertion_file\n    assertionFile: /x\n    signingKeyFile: \(keyFile)\n"), [
            "c.yaml: credentials.p.signingKeyFile: is only used with auth: private_key_jwt (auth is assertion_file)",
        ])
        XCTAssertEqual(problems("    secret: s\n    params:\n      client_assertion: x\n"), [
            "c.yaml: credentials.p.params.client_assertion: client_assertion cannot be given under params; token-sidecar sets it itself",
        ])
    }

    func testTLSClientAuthNeedsHTTPSAndAKeyPair() throws {
        let config = try XCTUnwrap(oauth2("    auth: tls_client_auth\n    clientCert: \(certFile)\n    clientKey: \(keyFile)\n"))
        XCTAssertEqual(config.tls, TLSSettings(clientCert: certFile, clientKey: keyFile))
        XCTAssertNil(config.secret)
        XCTAssertEqual(problems("    auth: tls_client_auth\n"), [
            "c.yaml: credentials.p: auth: tls_client_auth needs clientCert and clientKey: the certificate and key the TLS handshake presents",
        ])
        XCTAssertEqual(problems("    auth: tls_client_auth\n", tokenUrl: "http://idp.test/token"), [
            "c.yaml: credentials.p: auth: tls_client_auth needs clientCert and clientKey: the certificate and key the TLS handshake presents",
            "c.yaml: credentials.p.auth: tls_client_auth authenticates with the TLS client certificate, so it needs an https:// tokenUrl (tokenUrl is http://idp.test:80/token)",
        ])
        XCTAssertEqual(problems("    auth: tls_client_auth\n    clientCert: \(certFile)\n"), [
            "c.yaml: credentials.p.clientCert: clientCert needs clientKey as well (a client certificate and its key go together)",
        ])
    }

    func testMCACertificateFlow() throws {
        let yaml = "credentials:\n  m:\n    type: mca\n    serverUrl: http://mca.test/imf-authserver\n    tenantId: t1\n"
            + "    auth: certificate\n    clientCert: \(certFile)\n    clientKey: \(keyFile)\n"
        guard case .mca(let config) = parseOK(yaml)?.credentials.first?.kind else { return XCTFail("no mca credential") }
        XCTAssertEqual(config.auth, .certificate)
        XCTAssertEqual(config.certificate, ClientCertificateFiles(certificate: certFile, key: keyFile))
        XCTAssertNil(config.clientId, "the certificate's CN, read at start-up")
        XCTAssertEqual(config.origins["clientId"], .certificateSubject)
        XCTAssertEqual(config.tls, .default, "the signing pair is not a TLS client certificate")
        XCTAssertNil(config.secret)
        let rendered = try XCTUnwrap(parseOK(yaml)).renderEffective()
        XCTAssertTrue(rendered.contains("clientId: null  # from the client certificate's subject CN"), rendered)
        XCTAssertTrue(rendered.contains("auth: certificate"), rendered)
        XCTAssertTrue(rendered.contains("clientKey: \"\(keyFile)\""), rendered)
        XCTAssertFalse(rendered.contains("SENTINEL-KEY"), "never the key itself")

        let base = "credentials:\n  m:\n    type: mca\n    serverUrl: http://mca.test\n    tenantId: t1\n    auth: certificate\n"
        XCTAssertEqual(problemLines(base), [
            "c.yaml: credentials.m.clientCert: required key is missing: auth: certificate signs its IMFCert assertion with clientCert and its RSA clientKey",
            "c.yaml: credentials.m.clientKey: required key is missing: auth: certificate signs its IMFCert assertion with clientCert and its RSA clientKey",
        ])
        XCTAssertEqual(problemLines(base + "    clientCert: \(certFile)\n    clientKey: \(keyFile)\n    secret: s\n"), [
            "c.yaml: credentials.m.secret: auth: certificate uses no client secret; remove secret",
        ])
        XCTAssertEqual(problemLines(base.replacingOccurrences(of: "auth: certificate", with: "auth: cert")), [
            "c.yaml: credentials.m.auth: 'cert' is not one of secret, certificate",
        ])
    }

    func testClientAuthorizationPolicy() throws {
        let yaml = """
        credentials:
          api:
            type: static
            token: t
        routes:
          - host: a.test
            credential: api
          - host: b.test
            credential: api
            clientAuthorization: keep

        """
        let routes = try XCTUnwrap(parseOK(yaml)).routes
        XCTAssertEqual(routes.map(\.clientAuthorization), [.replace, .keep])
        XCTAssertTrue(try XCTUnwrap(parseOK(yaml)).renderEffective().contains("clientAuthorization: keep"))
        XCTAssertEqual(problemLines("routes:\n  - host: a.test\n    clientAuthorization: keep\n"), [
            "c.yaml: routes[0].clientAuthorization: only applies to a route with a credential (nothing is injected here, so there is nothing to replace or keep)",
        ])
        XCTAssertEqual(problemLines(yaml + "  - host: c.test\n    credential: api\n    clientAuthorization: merge\n"), [
            "c.yaml: routes[2].clientAuthorization: 'merge' is not one of replace, keep, exchange",
        ])
    }

    func testRenderShowsEachFlowWithoutItsSecret() throws {
        let yaml = """
        credentials:
          jwt:
            type: oauth2
            tokenUrl: https://idp.test/token
            clientId: svc
            auth: private_key_jwt
            signingKeyFile: \(keyFile)
          hmac:
            type: oauth2
            tokenUrl: https://idp.test/token
            clientId: svc
            auth: client_secret_jwt
            secret: SENTINEL-HMAC
            assertionLifetime: 90s
          file:
            type: oauth2
            tokenUrl: https://idp.test/token
            clientId: svc
            auth: assertion_file
            assertionFile: /var/run/secrets/tokens/sa

        """
        let text = try XCTUnwrap(parseOK(yaml)).renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"), text)
        for line in ["auth: private_key_jwt", "signingKeyFile: \"\(keyFile)\"", "signingKeyId: null",
                     "assertionAudience: \"https://idp.test:443/token\"  # default: the tokenUrl", "assertionLifetime: 1m",
                     "auth: client_secret_jwt", "secret: \"****\"", "assertionLifetime: 90s",
                     "assertionFile: \"/var/run/secrets/tokens/sa\"  # re-read before every fetch"] {
            XCTAssertTrue(text.contains(line), "\(line) in\n\(text)")
        }
    }
}
