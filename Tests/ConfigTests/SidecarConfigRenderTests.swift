import Config
import XCTest

final class SidecarConfigRenderTests: XCTestCase {
    func testRenderMasksInlineToken() throws {
        let yaml = """
            credentials:
              api:
                type: static
                token: "SENTINEL-TOKEN-123"
            routes:
              - host: api.test
                credential: api
            """
        let config = try XCTUnwrap(parseOK(yaml))
        let text = config.renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"))
        XCTAssertFalse(text.contains("TOKEN-123"))
        XCTAssertTrue(text.contains("token: \"****\""))
    }

    func testRenderShowsEveryKeyWithDefaults() throws {
        let config = try XCTUnwrap(parseOK("""
            credentials:
              env:
                type: static
                tokenEnv: MY_TOKEN
            routes:
              - host: "*.Example.com"
                upstream: "http://127.0.0.1:18080"
                credential: env
              - host: plain.test
            """, environment: ["MY_TOKEN": "SENTINEL-TOKEN-123"]))
        XCTAssertEqual(config.renderEffective(), """
            # effective configuration of c.yaml
            listen: "127.0.0.1:8080"
            workers: 1
            logLevel: info
            otherHosts: deny
            cacheSize: 100
            maxConnectionsPerUpstream: 256
            maxClientConnections: null  # derived from the descriptor limit at start
            admin: "127.0.0.1:9901"
            accessLog: true
            drainTimeout: 15s
            timeouts:
              connect: 5s
              responseHeaders: 1m
              clientHeader: 10s
              idle: 1m
              upstreamIdle: 30s
              bodyIdle: 1m
              upgradedIdle: 1h
            spool:
              directory: "/tmp"
              maxBytes: 1GiB
            connect: deny
            sharedCache: null  # tokens are fetched per process
            enforcement: enforce
            tracing:  # enabled: false (no endpoint; set endpoint or OTEL_EXPORTER_OTLP_ENDPOINT to export spans)
              endpoint: null
              tracesEndpoint: null
              headers: {}
              serviceName: "token-sidecar"
              resourceAttributes: {}
              sampler: parentbased_always_on
              samplerArg: 1.0  # unused by parentbased_always_on
              disabled: false
              compression: gzip
              timeout: 10s
              batch:
                maxQueueSize: 2048
                scheduleDelay: 5s
                exportTimeout: 30s
                maxExportBatchSize: 512
            credentials:
              "env":
                type: static
                tokenEnv: "MY_TOKEN"
            routes:
              - host: "*.example.com:80"
                upstream: "http://127.0.0.1:18080"
                upgrades: ["websocket"]
                preserveHost: false
                upstreamProtocol: auto
                credential: "env"
                clientAuthorization: replace
                inject: {header: "Authorization", format: "Bearer {token}"}  # the default (DPoP {token} for a DPoP-bound token)
              - host: "plain.test:80"
                upstream: null  # the requested destination
                upgrades: ["websocket"]
                preserveHost: false
                upstreamProtocol: auto
                credential: null  # no token injected

            """)
    }

    func testRenderedOutputLoadsBackToTheSameConfig() throws {
        let config = SidecarConfig(
            file: "c.yaml",
            listen: ListenAddress(host: "::1", port: 0),
            workers: 8,
            logLevel: .trace,
            otherHosts: .forward,
            credentials: [CredentialConfig(name: "e", kind: .staticToken(StaticTokenConfig(source: .env("A$B"))))],
            routes: [
                RouteConfig(host: HostPattern(kind: .suffix(".x.test"), port: 8443),
                            upstream: UpstreamAddress(host: "::1", port: 9), preserveHost: true, credential: "e"),
            ]
        )
        let reparsed = try XCTUnwrap(parseOK(config.renderEffective(), environment: ["A$B": "tok"]))
        XCTAssertEqual(reparsed, config)
    }

    func testRenderMaxClientConnectionsLoadsBack() throws {
        let config = SidecarConfig(file: "c.yaml", maxClientConnections: 300)
        XCTAssertTrue(config.renderEffective().contains("\nmaxClientConnections: 300\n"))
        XCTAssertEqual(parseOK(config.renderEffective())?.maxClientConnections, 300)
        let derived = SidecarConfig(file: "c.yaml")
        XCTAssertEqual(parseOK(derived.renderEffective()), derived, "the derived default renders as null and loads back")
    }

    func testEmptySections() throws {
        let text = SidecarConfig().renderEffective()
        XCTAssertTrue(text.contains("credentials: {}\n"))
        XCTAssertTrue(text.contains("routes: []\n"))
    }
}
