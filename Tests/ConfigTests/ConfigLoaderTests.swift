import Config
import Foundation
import XCTest

final class ConfigLoaderTests: XCTestCase {
    static let fullExample = """
        listen: "127.0.0.1:8080"
        workers: 4
        logLevel: debug
        otherHosts: forward
        credentials:
          api:
            type: static
            token: "abc123"
          fromFile:
            type: static
            tokenEnv: API_TOKEN
        routes:
          - host: "api.test"
            upstream: "http://127.0.0.1:18080"
            preserveHost: true
            credential: api
          - host: "*.example.com:8443"
            credential: fromFile
          - host: "plain.test:8080"
        """

    func testFullExampleParsesIntoExpectedValues() throws {
        let config = try ConfigLoader.parse(yaml: Self.fullExample, file: "x.yaml", environment: ["API_TOKEN": "t"])
        let expected = SidecarConfig(
            file: "x.yaml",
            listen: ListenAddress(host: "127.0.0.1", port: 8080),
            workers: 4,
            logLevel: .debug,
            otherHosts: .forward,
            credentials: [
                CredentialConfig(name: "api", kind: .staticToken(StaticTokenConfig(source: .inline("abc123")))),
                CredentialConfig(name: "fromFile", kind: .staticToken(StaticTokenConfig(source: .env("API_TOKEN")))),
            ],
            routes: [
                RouteConfig(
                    host: HostPattern(kind: .exact("api.test"), port: 80),
                    upstream: UpstreamAddress(scheme: "http", host: "127.0.0.1", port: 18080),
                    preserveHost: true,
                    credential: "api"
                ),
                RouteConfig(host: HostPattern(kind: .suffix(".example.com"), port: 8443), credential: "fromFile"),
                RouteConfig(host: HostPattern(kind: .exact("plain.test"), port: 8080)),
            ]
        )
        XCTAssertEqual(config, expected)
        XCTAssertEqual(config.credential(named: "fromFile")?.kind, .staticToken(StaticTokenConfig(source: .env("API_TOKEN"))))
        XCTAssertNil(config.credential(named: "nope"))
    }

    func testDefaults() throws {
        let config = try ConfigLoader.parse(yaml: "routes: []", environment: [:])
        XCTAssertEqual(config.file, "<string>")
        XCTAssertEqual(config.listen, ListenAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(config.listen.description, "127.0.0.1:8080")
        XCTAssertEqual(config.workers, 1)
        XCTAssertEqual(config.logLevel, .info)
        XCTAssertEqual(config.otherHosts, .deny)
        XCTAssertEqual(config.credentials, [])
        XCTAssertEqual(config.routes, [])
        XCTAssertEqual(config, SidecarConfig())
    }

    func testRouteDefaults() throws {
        let config = try XCTUnwrap(parseOK("routes:\n  - host: api.test\n"))
        XCTAssertEqual(config.routes, [RouteConfig(host: HostPattern(kind: .exact("api.test"), port: 80))])
        XCTAssertNil(config.routes[0].upstream)
        XCTAssertFalse(config.routes[0].preserveHost)
        XCTAssertNil(config.routes[0].credential)
    }

    func testNullOptionalValuesMeanDefault() throws {
        let config = try XCTUnwrap(parseOK("listen:\nworkers: ~\ncredentials:\nroutes:\n"))
        XCTAssertEqual(config, SidecarConfig(file: "c.yaml"))
    }

    func testExampleFileLoads() throws {
        // Tests/ConfigTests/ThisFile.swift -> ../../config/token-sidecar.yaml
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/token-sidecar.yaml").path
        let config = try ConfigLoader.load(path: path, environment: [:])
        XCTAssertEqual(config.file, path)
        XCTAssertEqual(config.listen.description, "127.0.0.1:8080")
        XCTAssertEqual(config.otherHosts, .deny)
        XCTAssertEqual(config.credentials, [
            CredentialConfig(name: "demo", kind: .staticToken(StaticTokenConfig(source: .inline("demo-token")))),
        ])
        XCTAssertEqual(config.routes, [
            RouteConfig(
                host: HostPattern(kind: .exact("api.test"), port: 80),
                upstream: UpstreamAddress(host: "127.0.0.1", port: 18080),
                preserveHost: false,
                credential: "demo"
            ),
        ])
        let overridden = try ConfigLoader.load(path: path, environment: ["TOKEN_SIDECAR_DEMO_TOKEN": "real"])
        XCTAssertEqual(overridden.credentials.first?.kind, .staticToken(StaticTokenConfig(source: .inline("real"))))
    }

    func testLoadMissingFile() {
        XCTAssertThrowsError(try ConfigLoader.load(path: "/nonexistent/sidecar.yaml", environment: [:])) { error in
            XCTAssertEqual("\(error)", "/nonexistent/sidecar.yaml: (root): cannot read config file: no such file")
        }
    }

    func testEmptyFile() throws {
        XCTAssertEqual(problemLines(""), ["c.yaml: (root): the file is empty; expected settings such as listen and routes"])
        XCTAssertEqual(problemLines("# only a comment\n"), ["c.yaml: (root): the file is empty; expected settings such as listen and routes"])
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("empty.yaml").path
        try Data().write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try ConfigLoader.load(path: path, environment: [:])) { error in
            XCTAssertEqual("\(error)", "\(path): (root): the file is empty; expected settings such as listen and routes")
        }
    }

    func testRootMustBeAMapping() {
        XCTAssertEqual(problemLines("- a\n- b\n"), ["c.yaml: (root): expected a mapping of settings such as listen and routes, got a list"])
        XCTAssertEqual(problemLines("hello"), ["c.yaml: (root): expected a mapping of settings such as listen and routes, got a scalar value"])
    }

    func testYAMLSyntaxErrorHasLineNumber() {
        let lines = problemLines("listen: \"127.0.0.1:8080\"\nroutes:\n  - host: [unclosed\n")
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].hasPrefix("c.yaml: line 4, column 1: invalid YAML: "), lines[0])
    }

    func testYAMLSyntaxErrorDoesNotQuoteTheSourceLine() {
        let lines = problemLines("credentials:\n  a:\n    token: \"SENTINEL-TOKEN-123\n")
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].contains("invalid YAML"), lines[0])
        XCTAssertFalse(lines[0].contains("SENTINEL"), lines[0])
    }

    func testUnquotedWildcardGetsAHint() {
        XCTAssertEqual(problemLines("routes:\n  - host: *.example.com\n"), [
            "c.yaml: line 2, column 12: invalid YAML: did not find expected alphabetic or numeric character"
                + " (while scanning an alias at line 2, column 11); a value starting with '*' must be quoted, e.g. host: \"*.example.com\"",
        ])
    }

    func testDuplicateYAMLKey() {
        let lines = problemLines("workers: 1\nworkers: 2\n")
        XCTAssertEqual(lines, ["c.yaml: line 1, column 1: invalid YAML: duplicate key 'workers' (a key may appear only once per mapping)"])
    }

    func testMultipleProblemsReportedTogetherInFileOrder() {
        let yaml = """
            listen: "nohost"
            workers: 0
            logLevel: verbose
            otherHosts: allow
            credentials:
              api:
                type: static
            routes:
              - host: "http://api.test"
                upstrem: "http://x"
                credential: apii
              - upstream: "gopher://secure.test"
            """
        XCTAssertEqual(problemLines(yaml), [
            "c.yaml: listen: invalid listen address 'nohost': expected host:port, e.g. 127.0.0.1:8080",
            "c.yaml: workers: must be between 1 and 64 (got 0)",
            "c.yaml: logLevel: 'verbose' is not one of trace, debug, info, notice, warning, error, critical",
            "c.yaml: otherHosts: 'allow' is not one of deny, forward",
            "c.yaml: credentials.api: a static credential needs exactly one of token, tokenFile or tokenEnv; none is given",
            "c.yaml: routes[0].host: invalid host pattern 'http://api.test': host pattern must not have a scheme; write just the host, e.g. api.example.com",
            "c.yaml: routes[0].upstrem: unknown key (did you mean 'upstream'?)",
            "c.yaml: routes[0].credential: no credential named 'apii' under credentials; did you mean 'api'?",
            "c.yaml: routes[1].host: required key is missing (e.g. host: api.example.com or host: \"*.example.com\")",
            "c.yaml: routes[1].upstream: invalid upstream 'gopher://secure.test': unsupported scheme 'gopher': only http:// and https:// upstreams are supported",
        ])
    }

    func testLoadRelativeTokenFileResolvesAgainstConfigDirectory() throws {
        let dir = try makeTemporaryDirectory(self)
        try "file-token\n".write(to: dir.appendingPathComponent("token.txt"), atomically: true, encoding: .utf8)
        let configPath = dir.appendingPathComponent("sidecar.yaml").path
        try """
            credentials:
              a:
                type: static
                tokenFile: token.txt
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let config = try ConfigLoader.load(path: configPath, environment: [:])
        guard case .staticToken(let token) = config.credentials.first?.kind else { return XCTFail("no credential") }
        XCTAssertEqual(token.source, .file(dir.appendingPathComponent("token.txt").standardizedFileURL.path))
        XCTAssertEqual(try token.source.read(environment: [:]), "file-token")
    }
}

