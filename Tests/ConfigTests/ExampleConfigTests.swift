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
}
