import Config
import Foundation
import XCTest

/// `renderEffective()` for mca and oauth2 credentials, https routes and process settings.
final class CredentialRenderTests: XCTestCase {
    private let sentinel = "SENTINEL-SECRET-123"

    func testMCAFromVCAPShowsOriginsAndMasksTheSecret() throws {
        var credentials = ["serverUrl": "https://mca.test/imf-authserver", "clientId": "vcap-client", "secret": sentinel]
        credentials["tenantId"] = nil
        let environment = ["VCAP_SERVICES": vcapServices(credentials), "VCAP_APPLICATION": vcapApplication("app-guid")]
        let config = try XCTUnwrap(parseOK("credentials:\n  mca:\n    type: mca\n", environment: environment))
        let text = config.renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertFalse(text.contains("SECRET-123"))
        XCTAssertTrue(text.contains("""
              "mca":
                type: mca
                serverUrl: "https://mca.test:443/imf-authserver"  # from VCAP_SERVICES binding "mca-instance" (AdvancedMobileAccess)
                tenantId: "app-guid"  # from VCAP_APPLICATION
                clientId: "vcap-client"  # from VCAP_SERVICES binding "mca-instance" (AdvancedMobileAccess)
                auth: secret
                secret: "****"  # from VCAP_SERVICES binding "mca-instance" (AdvancedMobileAccess)
                refreshAt: "80%"
                defaultLifetime: 5m
                tokenWait: 5s
                unauthorizedRefetchInterval: 10s
                caFile: null  # the system trust store
                clientCert: null  # no client certificate
                clientKey: null
                insecureSkipVerify: false

            """), text)
    }

    func testMCAFileOriginsAndSecretSources() throws {
        let secretPath = try writeTemporaryFile(self, "secret", sentinel + "\n")
        let yaml = """
            credentials:
              a:
                type: mca
                serverUrl: http://mca.test
                appId: t
                clientId: c
                secretFile: "\(secretPath)"
              b:
                type: mca
                serverUrl: http://mca.test
                tenantId: t
                clientId: c
                secretEnv: MCA_SECRET
            """
        let text = try XCTUnwrap(parseOK(yaml, environment: ["MCA_SECRET": sentinel])).renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertTrue(text.contains("    tenantId: \"t\"  # from the config file\n"), text)
        XCTAssertTrue(text.contains("    secretFile: \"\(secretPath)\"  # from the config file\n"), text)
        XCTAssertTrue(text.contains("    secretEnv: \"MCA_SECRET\"  # from environment variable MCA_SECRET\n"), text)
        // No TLS keys for an http serverUrl: they would not load back.
        XCTAssertFalse(text.contains("caFile"))
    }

    func testOAuth2AndProcessSettingsRoundTrip() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let yaml = """
            cacheSize: 5000
            maxConnectionsPerUpstream: 16
            maxClientConnections: 4000
            admin: "127.0.0.1:9901"
            accessLog: true
            drainTimeout: 15s
            timeouts:
              connect: 250ms
              bodyIdle: 1.5s
              idle: 2h
            connect:
              allow: ["Git.Test:22", "[::1]:443"]
            credentials:
              partner:
                type: oauth2
                tokenUrl: "https://idp.test/oauth/token"
                clientId: "client$$1"
                secretEnv: PARTNER_SECRET
                auth: post
                scope: "read write"
                params: {b: "2", a: "1"}
                refreshAt: 87.5%
                defaultLifetime: 90s
                tokenWait: 0s
                unauthorizedRefetchInterval: 10s
                caFile: "\(ca)"
            routes:
              - host: api.test
                upstream: "https://api.example.com"
                credential: partner
                insecureSkipVerify: true
            """
        let environment = ["PARTNER_SECRET": sentinel]
        let config = try XCTUnwrap(parseOK(yaml, environment: environment))
        let text = config.renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertTrue(text.contains("""
            cacheSize: 5000
            maxConnectionsPerUpstream: 16
            maxClientConnections: 4000
            admin: "127.0.0.1:9901"
            accessLog: true
            drainTimeout: 15s
            timeouts:
              connect: 250ms
              responseHeaders: 1m
              clientHeader: 10s
              idle: 2h
              upstreamIdle: 30s
              bodyIdle: 1500ms
              upgradedIdle: 1h
            spool:
              directory: "/tmp"
              maxBytes: 1GiB
            connect:
              allow:
                - "git.test:22"
                - "[::1]:443"

            """), text)
        XCTAssertTrue(text.contains("""
                tokenUrl: "https://idp.test:443/oauth/token"
                clientId: "client$$1"
                auth: post
                grant: client_credentials
                secretEnv: "PARTNER_SECRET"
                scope: "read write"
                audience: null
                resource: null
                params:
                  "b": "2"
                  "a": "1"
                dpop: false  # bearer tokens
                refreshAt: "87.5%"
                defaultLifetime: 90s
                tokenWait: 0s
                unauthorizedRefetchInterval: 10s
                caFile: "\(ca)"

            """), text)
        XCTAssertTrue(text.contains("""
                upstream: "https://api.example.com:443"
                upgrades: ["websocket"]
                preserveHost: false
                upstreamProtocol: auto
                caFile: null  # the system trust store
                clientCert: null  # no client certificate
                clientKey: null
                insecureSkipVerify: true

            """), text)
        let reparsed = try XCTUnwrap(parseOK(text, environment: environment))
        XCTAssertEqual(reparsed, config)
    }

    func testInlineOAuth2SecretIsMasked() throws {
        let yaml = "credentials:\n  p:\n    type: oauth2\n    tokenUrl: http://i.test/t\n    clientId: c\n    secret: \"\(sentinel)\"\n"
        let text = try XCTUnwrap(parseOK(yaml)).renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertTrue(text.contains("    secret: \"****\"\n"), text)
        XCTAssertTrue(text.contains("    params: {}\n"), text)
    }

    func testSubMillisecondDurationsRoundTrip() throws {
        let config = SidecarConfig(file: "c.yaml", timeouts: Timeouts(connect: .nanoseconds(1_500), idle: .nanoseconds(1_000_000_001)))
        let text = config.renderEffective()
        XCTAssertTrue(text.contains("  connect: 0.0000015s\n"), text)
        XCTAssertTrue(text.contains("  idle: 1.000000001s\n"), text)
        XCTAssertEqual(try XCTUnwrap(parseOK(text)), config)
    }
}
