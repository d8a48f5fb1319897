import Config
import Foundation
import XCTest

/// The example files under config/ load and mean what their comments say.
final class ExampleConfigTests: XCTestCase {
    /// Tests/ConfigTests/ThisFile.swift -> ../../config/NAME
    private func examplePath(_ name: String) -> String {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/\(name)").path
    }

    func testMCAVCAPExample() throws {
        let environment = [
            "VCAP_SERVICES": vcapServices([
                "serverUrl": "https://mca.example.com/imf-authserver/", "clientId": "vcap-client", "secret": "SENTINEL-SECRET-123",
            ]),
            "VCAP_APPLICATION": vcapApplication("app-guid"),
        ]
        let config = try ConfigLoader.load(path: examplePath("mca-vcap.yaml"), environment: environment)
        XCTAssertEqual(config.credentials, [
            CredentialConfig(name: "mca", kind: .mca(MCAConfig(
                serverUrl: EndpointURL(scheme: "https", host: "mca.example.com", path: "/imf-authserver/"),
                tenantId: "app-guid", clientId: "vcap-client", secret: .inline("SENTINEL-SECRET-123"),
                origins: ["serverUrl": vcapOrigin, "tenantId": .vcapApplication, "clientId": vcapOrigin, "secret": vcapOrigin]))),
        ])
        XCTAssertEqual(config.routes, [
            RouteConfig(host: HostPattern(kind: .exact("cloudant.local")),
                        upstream: UpstreamAddress(scheme: "https", host: "account.cloudant.com", port: 443), credential: "mca"),
        ])
        XCTAssertEqual(config.routes.first?.upstream?.authority, "account.cloudant.com")
        XCTAssertFalse(config.renderEffective().contains("SENTINEL"))
        XCTAssertThrowsError(try ConfigLoader.load(path: examplePath("mca-vcap.yaml"), environment: [:]))
    }

    func testOAuth2Example() throws {
        let config = try ConfigLoader.load(path: examplePath("oauth2.yaml"), environment: ["PARTNER_CLIENT_SECRET": "s"])
        XCTAssertEqual(config.credentials, [
            CredentialConfig(name: "partner", kind: .oauth2(OAuth2Config(
                tokenUrl: EndpointURL(scheme: "https", host: "idp.example.com", path: "/oauth/token"),
                clientId: "token-sidecar-demo", secret: .env("PARTNER_CLIENT_SECRET"), auth: .basic, scope: "read write"))),
        ])
        XCTAssertEqual(config.routes, [
            RouteConfig(host: HostPattern(kind: .exact("api.local")),
                        upstream: UpstreamAddress(scheme: "https", host: "api.example.com", port: 443), credential: "partner"),
        ])
        XCTAssertThrowsError(try ConfigLoader.load(path: examplePath("oauth2.yaml"), environment: [:])) { error in
            XCTAssertTrue("\(error)".hasSuffix("credentials.partner.secretEnv: environment variable PARTNER_CLIENT_SECRET is not set"))
        }
    }

    func testStaticExample() throws {
        let config = try ConfigLoader.load(path: examplePath("static.yaml"), environment: ["API_TOKEN": "t"])
        XCTAssertEqual(config.credentials, [CredentialConfig(name: "api", kind: .staticToken(StaticTokenConfig(source: .env("API_TOKEN"))))])
        XCTAssertEqual(config.routes.first?.upstream, UpstreamAddress(scheme: "https", host: "api.example.com", port: 443))
    }

    func testMainExampleStillLoads() throws {
        XCTAssertNoThrow(try ConfigLoader.load(path: examplePath("token-sidecar.yaml"), environment: [:]))
    }

    /// Loads an example whose files live under /var/run/secrets/, with that directory moved to
    /// a temporary one holding marker-only PEM files for every `.key`, `.crt` and `.pem` it names.
    private func loadWithSecrets(_ name: String, environment: [String: String] = [:]) throws -> SidecarConfig {
        let root = try makeTemporaryDirectory(self).path + "/"
        let text = try String(contentsOfFile: examplePath(name), encoding: .utf8).replacingOccurrences(of: "/var/run/secrets/", with: root)
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) where word.hasPrefix(root) {
            let path = String(word)
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if path.hasSuffix(".key") {
                try FakePEM.key.write(toFile: path, atomically: true, encoding: .utf8)
            } else if path.hasSuffix(".crt") || path.hasSuffix(".pem") {
                try FakePEM.certificate.write(toFile: path, atomically: true, encoding: .utf8)
            }
        }
        return try ConfigLoader.parse(yaml: text, file: name, environment: environment)
    }

    private func oauth2(_ config: SidecarConfig) throws -> OAuth2Config {
        guard case .oauth2(let oauth) = config.credentials.first?.kind else { throw ConfigError(problems: []) }
        return oauth
    }

    func testPrivateKeyJWTExample() throws {
        let config = try oauth2(try loadWithSecrets("oauth2-private-key-jwt.yaml"))
        XCTAssertEqual(config.auth, .privateKeyJWT)
        XCTAssertEqual(config.assertion?.keyId, "2026-11")
        XCTAssertTrue(config.assertion?.signingKeyFile?.hasSuffix("/partner/signing.key") ?? false)
        XCTAssertNil(config.secret)
    }

    func testClientSecretJWTExample() throws {
        let config = try oauth2(try loadWithSecrets("oauth2-client-secret-jwt.yaml", environment: ["PARTNER_CLIENT_SECRET": "s"]))
        XCTAssertEqual(config.auth, .clientSecretJWT)
        XCTAssertEqual(config.secret, .env("PARTNER_CLIENT_SECRET"))
    }

    func testWorkloadIdentityExamples() throws {
        let kubernetes = try oauth2(try loadWithSecrets("kubernetes-projected-token.yaml"))
        XCTAssertEqual(kubernetes.auth, .assertionFile)
        XCTAssertTrue(kubernetes.assertionFile?.hasSuffix("/tokens/token-sidecar") ?? false)
        XCTAssertEqual(kubernetes.scope, "api://orders-api/.default")
        let spiffe = try oauth2(try loadWithSecrets("spiffe-jwt-svid.yaml"))
        XCTAssertEqual(spiffe.auth, .assertionFile)
        XCTAssertEqual(spiffe.clientId, "spiffe://example.org/ns/payments/sa/checkout")
    }

    func testMutualTLSExample() throws {
        let config = try oauth2(try loadWithSecrets("oauth2-mtls.yaml"))
        XCTAssertEqual(config.auth, .tlsClientAuth)
        XCTAssertTrue(config.tls.clientCert?.hasSuffix("/mtls/tls.crt") ?? false)
        XCTAssertTrue(config.tls.caFile?.hasSuffix("/mtls/ca.crt") ?? false)
    }

    func testMCACertificateExample() throws {
        let loaded = try loadWithSecrets("mca-certificate.yaml")
        guard case .mca(let config) = loaded.credentials.first?.kind else { return XCTFail("no mca credential") }
        XCTAssertEqual(config.auth, .certificate)
        XCTAssertNil(config.clientId)
        XCTAssertTrue(config.certificate?.key.hasSuffix("/mca/client.key") ?? false)
        XCTAssertEqual(loaded.routes.first?.clientAuthorization, .keep)
    }
}
