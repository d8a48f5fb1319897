import Config
import XCTest

/// Validation of top-level keys, types and `${VAR}` expansion.
final class ConfigDecoderTests: XCTestCase {
    func testUnknownRootKeyWithSuggestion() {
        XCTAssertEqual(problemLines("listn: \"127.0.0.1:1\"\n"), ["c.yaml: listn: unknown key (did you mean 'listen'?)"])
        XCTAssertEqual(problemLines("loglevel: info\n"), ["c.yaml: loglevel: unknown key (did you mean 'logLevel'?)"])
    }

    func testUnknownRootKeyWithoutSuggestion() {
        XCTAssertEqual(problemLines("banana: 1\n"), [
            "c.yaml: banana: unknown key (known keys: listen, workers, logLevel, otherHosts, cacheSize, maxConnectionsPerUpstream, maxClientConnections, timeouts, connect, admin, accessLog, drainTimeout, spool, credentials, routes, sharedCache, intercept, tracing, audit, enforcement, credentialEndpoints)",
        ])
    }

    func testUnknownKeysAtEveryLevel() {
        let yaml = """
            credentials:
              a:
                type: static
                token: x
                tokn: SENTINEL-TOKEN-123
            routes:
              - host: api.test
                upstrem: "http://127.0.0.1:1"
                preservehost: true
            """
        let lines = problemLines(yaml)
        XCTAssertEqual(lines, [
            "c.yaml: credentials.a.tokn: unknown key (did you mean 'token'?)",
            "c.yaml: routes[0].upstrem: unknown key (did you mean 'upstream'?)",
            "c.yaml: routes[0].preservehost: unknown key (did you mean 'preserveHost'?)",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
    }

    func testListenVariants() throws {
        XCTAssertEqual(parseOK("listen: \"[::1]:9000\"")?.listen, ListenAddress(host: "::1", port: 9000))
        XCTAssertEqual(parseOK("listen: \"[::1]:9000\"")?.listen.description, "[::1]:9000")
        XCTAssertEqual(parseOK("listen: \"127.0.0.1:0\"")?.listen.port, 0)
        XCTAssertEqual(parseOK("listen: localhost:8080")?.listen, ListenAddress(host: "localhost", port: 8080))
        XCTAssertEqual(parseOK("listen: 0.0.0.0:80")?.listen, ListenAddress(host: "0.0.0.0", port: 80))
    }

    func testBadListenAddresses() {
        XCTAssertEqual(problemLines("listen: 8080"), ["c.yaml: listen: invalid listen address '8080': expected host:port, e.g. 127.0.0.1:8080"])
        XCTAssertEqual(problemLines("listen: \":8080\""), [
            "c.yaml: listen: invalid listen address ':8080': missing host before ':' (use 0.0.0.0:8080 to listen on all interfaces)",
        ])
        XCTAssertEqual(problemLines("listen: \"127.0.0.1:70000\""), [
            "c.yaml: listen: invalid listen address '127.0.0.1:70000': invalid port '70000': expected a number from 0 to 65535",
        ])
        XCTAssertEqual(problemLines("listen: \"::1:8080\""), [
            "c.yaml: listen: invalid listen address '::1:8080': IPv6 addresses must be written in brackets, e.g. [::1]:8080",
        ])
        XCTAssertEqual(problemLines("listen: \"[::zz]:8080\""), [
            "c.yaml: listen: invalid listen address '[::zz]:8080': '::zz' is not a valid IPv6 address",
        ])
        XCTAssertEqual(problemLines("listen: \"300.1.1.1:80\""), [
            "c.yaml: listen: invalid listen address '300.1.1.1:80': '300.1.1.1' is not a valid IPv4 address",
        ])
        XCTAssertEqual(problemLines("listen: [a]"), ["c.yaml: listen: expected a string, got a list"])
    }

    func testWorkers() {
        XCTAssertEqual(parseOK("workers: 64")?.workers, 64)
        XCTAssertEqual(problemLines("workers: 65"), ["c.yaml: workers: must be between 1 and 64 (got 65)"])
        XCTAssertEqual(problemLines("workers: two"), ["c.yaml: workers: expected an integer, got 'two'"])
        XCTAssertEqual(problemLines("workers: 1.5"), ["c.yaml: workers: expected an integer, got '1.5'"])
    }

    func testEnums() {
        XCTAssertEqual(parseOK("logLevel: critical")?.logLevel, .critical)
        XCTAssertEqual(parseOK("otherHosts: forward")?.otherHosts, .forward)
        XCTAssertEqual(problemLines("logLevel: Info"), [
            "c.yaml: logLevel: 'Info' is not one of trace, debug, info, notice, warning, error, critical (did you mean 'info'?)",
        ])
        XCTAssertEqual(problemLines("otherHosts: {a: 1}"), ["c.yaml: otherHosts: expected a string, got a mapping"])
    }

    func testWrongSectionTypes() {
        XCTAssertEqual(problemLines("routes: api.test"), ["c.yaml: routes: expected a list of routes, got a scalar value"])
        XCTAssertEqual(problemLines("credentials: [a]"), [
            "c.yaml: credentials: expected a mapping from credential names to settings, got a list",
        ])
        XCTAssertEqual(problemLines("routes:\n  - api.test\n"), [
            "c.yaml: routes[0]: expected a mapping with at least 'host', got a scalar value",
        ])
    }

    func testNonStringKey() {
        XCTAssertEqual(problemLines("? [a, b]\n: 1\n"), ["c.yaml: (root): keys must be plain strings, got a list as a key"])
    }

    // MARK: - ${VAR} expansion

    func testVariableExpansion() throws {
        let yaml = """
            listen: "${HOST}:${PORT:-9090}"
            workers: ${WORKERS}
            logLevel: ${LEVEL:-warning}
            routes:
              - host: "${API_HOST}"
                upstream: "http://${UP:-127.0.0.1}:1"
            """
        let config = try XCTUnwrap(parseOK(yaml, environment: ["HOST": "0.0.0.0", "WORKERS": "3", "API_HOST": "api.test", "UP": ""]))
        XCTAssertEqual(config.listen, ListenAddress(host: "0.0.0.0", port: 9090))
        XCTAssertEqual(config.workers, 3)
        XCTAssertEqual(config.logLevel, .warning)
        XCTAssertEqual(config.routes.first?.host, HostPattern(kind: .exact("api.test"), port: 80))
        // Set but empty uses the default.
        XCTAssertEqual(config.routes.first?.upstream, UpstreamAddress(host: "127.0.0.1", port: 1))
    }

    func testDollarDollarIsLiteralDollar() throws {
        let yaml = """
            credentials:
              a:
                type: static
                token: "pa$$word-${X}-$$${X}-$plain"
            """
        let config = try XCTUnwrap(parseOK(yaml, environment: ["X": "x"]))
        XCTAssertEqual(config.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .inline("pa$word-x-$x-$plain"))))
    }

    func testDefaultMayBeEmptyOrContainColons() throws {
        XCTAssertEqual(parseOK("listen: \"${L:-127.0.0.1:7000}\"")?.listen, ListenAddress(host: "127.0.0.1", port: 7000))
    }

    func testUnsetVariableNamesTheKey() {
        XCTAssertEqual(problemLines("listen: \"${NOPE}\""), [
            "c.yaml: listen: environment variable NOPE is not set (use ${NOPE:-default} to give a default)",
        ])
        XCTAssertEqual(problemLines("routes:\n  - host: ${H}\n"), [
            "c.yaml: routes[0].host: environment variable H is not set (use ${H:-default} to give a default)",
        ])
    }

    func testMalformedReferences() {
        XCTAssertEqual(problemLines("listen: \"${OPEN\""), ["c.yaml: listen: unterminated '${' (write '$$' for a literal '$')"])
        XCTAssertEqual(problemLines("listen: \"${1BAD}\""), [
            "c.yaml: listen: invalid variable name in '${...}': use letters, digits and '_', not starting with a digit",
        ])
    }

    func testSetButEmptyWithoutDefaultIsEmpty() {
        XCTAssertEqual(problemLines("credentials:\n  a:\n    type: static\n    token: \"${T}\"\n", environment: ["T": ""]), [
            "c.yaml: credentials.a.token: token is empty",
        ])
    }

    func testKeysAreNotExpanded() {
        XCTAssertEqual(problemLines("${K}: 1\n", environment: ["K": "workers"]), [
            "c.yaml: ${K}: unknown key (known keys: listen, workers, logLevel, otherHosts, cacheSize, maxConnectionsPerUpstream, maxClientConnections, timeouts, connect, admin, accessLog, drainTimeout, spool, credentials, routes, sharedCache, intercept, tracing, audit, enforcement, credentialEndpoints)",
        ])
    }
}

final class OperationsKeysTests: XCTestCase {
    func testAdminAccessLogAndDrainTimeout() throws {
        let config = try ConfigLoader.parse(yaml: """
            admin: "127.0.0.1:0"
            accessLog: false
            drainTimeout: 2s
            """, file: "c.yaml", environment: [:])
        XCTAssertEqual(config.admin.description, "127.0.0.1:0")
        XCTAssertFalse(config.accessLog)
        XCTAssertEqual(config.drainTimeout, .seconds(2))
        let defaults = try ConfigLoader.parse(yaml: "{}", file: "c.yaml", environment: [:])
        XCTAssertEqual(defaults.admin.description, "127.0.0.1:9901")
        XCTAssertTrue(defaults.accessLog)
        XCTAssertEqual(defaults.drainTimeout, .seconds(15))
    }

    func testBadOperationsValuesNameTheirKeys() {
        XCTAssertThrowsError(try ConfigLoader.parse(yaml: """
            admin: "nope"
            accessLog: maybe
            drainTimeout: 5
            """, file: "c.yaml", environment: [:])) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("c.yaml: admin:"), text)
            XCTAssertTrue(text.contains("c.yaml: accessLog:"), text)
            XCTAssertTrue(text.contains("c.yaml: drainTimeout:"), text)
        }
    }
}

final class EnvironmentOverridesTests: XCTestCase {
    func testVariablesOverrideFileValuesAndAreValidated() throws {
        let yaml = """
            listen: "127.0.0.1:8080"
            workers: 1
            timeouts: {connect: 5s}
            """
        let config = try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: [
            "TOKEN_SIDECAR_LISTEN": "127.0.0.1:9999",
            "TOKEN_SIDECAR_WORKERS": "3",
            "TOKEN_SIDECAR_LOG_LEVEL": "debug",
            "TOKEN_SIDECAR_ACCESS_LOG": "false",
            "TOKEN_SIDECAR_TIMEOUTS_CONNECT": "250ms",
            "TOKEN_SIDECAR_TIMEOUTS_IDLE": "2m",
        ])
        XCTAssertEqual(config.listen.description, "127.0.0.1:9999")
        XCTAssertEqual(config.workers, 3)
        XCTAssertEqual(config.logLevel, .debug)
        XCTAssertFalse(config.accessLog)
        XCTAssertEqual(config.timeouts.connect, .milliseconds(250))
        XCTAssertEqual(config.timeouts.idle, .seconds(120))
        XCTAssertThrowsError(try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: ["TOKEN_SIDECAR_WORKERS": "lots"])) {
            XCTAssertTrue("\($0)".contains("c.yaml: workers:"), "\($0)")
        }
    }

    func testMaxClientConnectionsOverride() throws {
        let yaml = "maxClientConnections: 100\n"
        let config = try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: ["TOKEN_SIDECAR_MAX_CLIENT_CONNECTIONS": "7"])
        XCTAssertEqual(config.maxClientConnections, 7)
        let unset = try ConfigLoader.parse(yaml: "routes: []\n", file: "c.yaml", environment: ["TOKEN_SIDECAR_MAX_CLIENT_CONNECTIONS": "12"])
        XCTAssertEqual(unset.maxClientConnections, 12, "the variable works when the file does not set the key")
        XCTAssertThrowsError(try ConfigLoader.parse(yaml: yaml, file: "c.yaml", environment: ["TOKEN_SIDECAR_MAX_CLIENT_CONNECTIONS": "0"])) {
            XCTAssertTrue("\($0)".contains("c.yaml: maxClientConnections: must be between 1 and 1000000 (got 0)"), "\($0)")
        }
    }

    func testSpoolOverrides() throws {
        let config = try ConfigLoader.parse(yaml: "spool: {directory: /a}\n", file: "c.yaml", environment: [
            "TOKEN_SIDECAR_SPOOL_DIRECTORY": "/data/spool", "TOKEN_SIDECAR_SPOOL_MAX_BYTES": "256MiB",
        ])
        XCTAssertEqual(config.spool, SpoolConfig(directory: "/data/spool", maxBytes: 256 << 20))
        let unset = try ConfigLoader.parse(yaml: "routes: []\n", file: "c.yaml", environment: ["TOKEN_SIDECAR_SPOOL_MAX_BYTES": "0"])
        XCTAssertEqual(unset.spool.maxBytes, 0, "the variable works when the file has no spool section")
        XCTAssertThrowsError(try ConfigLoader.parse(yaml: "routes: []\n", file: "c.yaml", environment: ["TOKEN_SIDECAR_SPOOL_MAX_BYTES": "big"])) {
            XCTAssertTrue("\($0)".contains("c.yaml: spool.maxBytes: expected a number of bytes"), "\($0)")
        }
    }

    func testVariableNames() {
        XCTAssertEqual(EnvironmentOverrides.variable(for: "maxConnectionsPerUpstream"), "TOKEN_SIDECAR_MAX_CONNECTIONS_PER_UPSTREAM")
        XCTAssertEqual(EnvironmentOverrides.variable(for: "maxClientConnections"), "TOKEN_SIDECAR_MAX_CLIENT_CONNECTIONS")
        XCTAssertEqual(EnvironmentOverrides.variable(for: "timeouts.responseHeaders"), "TOKEN_SIDECAR_TIMEOUTS_RESPONSE_HEADERS")
    }
}
