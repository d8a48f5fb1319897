import Config
import XCTest

/// Validation of `routes:`.
final class ConfigDecoderRoutesTests: XCTestCase {
    private let credentials = "credentials:\n  api:\n    type: static\n    token: t\n"

    func testMissingHost() {
        XCTAssertEqual(problemLines("routes:\n  - credential: x\n" ), [
            "c.yaml: routes[0].host: required key is missing (e.g. host: api.example.com or host: \"*.example.com\")",
            "c.yaml: routes[0].credential: no credential named 'x': no credentials are defined",
        ])
    }

    func testUnknownCredential() {
        XCTAssertEqual(problemLines(credentials + "routes:\n  - host: a.test\n  - host: b.test\n    credential: other\n"), [
            "c.yaml: routes[1].credential: no credential named 'other' under credentials (defined: api)",
        ])
        XCTAssertEqual(problemLines(credentials + "routes:\n  - host: a.test\n    credential: Api\n"), [
            "c.yaml: routes[0].credential: no credential named 'Api' under credentials; did you mean 'api'?",
        ])
    }

    func testBrokenCredentialIsNotAlsoReportedAsUnknown() {
        XCTAssertEqual(problemLines("credentials:\n  api:\n    type: static\nroutes:\n  - host: a.test\n    credential: api\n"), [
            "c.yaml: credentials.api: a static credential needs exactly one of token, tokenFile or tokenEnv; none is given",
        ])
    }

    func testDuplicateHosts() {
        let yaml = "routes:\n  - host: api.test\n  - host: API.test.:80\n  - host: api.test:8080\n  - host: \"*.x.test\"\n  - host: \"*.X.test\"\n"
        XCTAssertEqual(problemLines(yaml), [
            "c.yaml: routes[1].host: duplicate route for api.test:80 (already defined by routes[0].host)",
            "c.yaml: routes[4].host: duplicate route for *.x.test:80 (already defined by routes[3].host)",
        ])
    }

    func testBadHostPatterns() {
        let cases: [(String, String)] = [
            ("http://a.test", "host pattern must not have a scheme; write just the host, e.g. api.example.com"),
            ("a.test/path", "host pattern must not contain a path"),
            ("user@a.test", "host pattern must not contain userinfo (user@)"),
            ("a.*.test", "'*' is only allowed as the whole first label, as in *.example.com"),
            ("*a.test", "'*' must be followed by '.', as in *.example.com"),
            ("a..test", "host name 'a..test' has an empty label"),
            ("a.test:0", "invalid port '0': expected a number from 1 to 65535"),
            ("a.test:http", "invalid port 'http': expected a number from 1 to 65535"),
            ("a.test:", "invalid port '': expected a number from 1 to 65535"),
        ]
        for (text, message) in cases {
            XCTAssertEqual(problemLines("routes:\n  - host: \"\(text)\"\n"), [
                "c.yaml: routes[0].host: invalid host pattern '\(text)': \(message)",
            ], text)
        }
    }

    func testUpstreams() throws {
        let config = try XCTUnwrap(parseOK("routes:\n  - host: a.test\n    upstream: \"HTTP://Up.Test/\"\n"))
        XCTAssertEqual(config.routes.first?.upstream, UpstreamAddress(scheme: "http", host: "up.test", port: 80))
    }

    func testBadUpstreams() {
        let cases: [(String, String)] = [
            ("ftp://a.test", "unsupported scheme 'ftp': only http:// and https:// upstreams are supported"),
            ("a.test:80", "expected a URL like http://host:port"),
            ("http://a.test/v1", "upstream URL must not have a path (got '/v1'); requests keep their own path"),
            ("http://a.test/?q=1", "upstream URL must not have a query"),
            ("http://u:p@a.test", "upstream URL must not contain userinfo (user@)"),
            ("http://a.test:99999", "invalid port '99999': expected a number from 1 to 65535"),
            ("http://", "upstream URL has no host"),
        ]
        for (text, message) in cases {
            XCTAssertEqual(problemLines("routes:\n  - host: a.test\n    upstream: \"\(text)\"\n"), [
                "c.yaml: routes[0].upstream: invalid upstream '\(text)': \(message)",
            ], text)
        }
    }

    func testPreserveHost() {
        XCTAssertEqual(parseOK("routes:\n  - host: a.test\n    preserveHost: TRUE\n")?.routes.first?.preserveHost, true)
        XCTAssertEqual(problemLines("routes:\n  - host: a.test\n    preserveHost: maybe\n"), [
            "c.yaml: routes[0].preserveHost: expected true or false, got 'maybe'",
        ])
    }

    // MARK: - upgrades

    func testUpgradesAndTheirLifetime() throws {
        let config = try XCTUnwrap(parseOK("""
            timeouts: {upgradedIdle: 10m}
            routes:
              - host: "a.test"
                upgrades: [websocket, Foo, foo]
                maxUpgradedLifetime: 1h
              - host: "b.test"
            """))
        XCTAssertEqual(config.timeouts.upgradedIdle, .seconds(600))
        XCTAssertEqual(config.routes[0].upgrades, ["foo"], "websocket is always allowed; names are lowercase, listed once")
        XCTAssertEqual(config.routes[0].maxUpgradedLifetime, .seconds(3600))
        XCTAssertEqual(config.routes[1].upgrades, [])
        XCTAssertNil(config.routes[1].maxUpgradedLifetime)
        XCTAssertEqual(try XCTUnwrap(parseOK("routes: []\n")).timeouts.upgradedIdle, .seconds(3600), "1h by default")
    }

    func testUpgradeMistakesAreNamedByKey() {
        XCTAssertEqual(problemLines("""
            timeouts: {upgradedIdle: 0s}
            routes:
              - host: "a.test"
                upgrades: [h2c, "foo/1", ""]
                maxUpgradedLifetime: 0s
              - host: "b.test"
                upgrades: websocket
            """), [
            "c.yaml: timeouts.upgradedIdle: must be greater than 0",
            "c.yaml: routes[0].upgrades[0]: h2c is never passed on: HTTP/2 cannot be relayed as an upgraded byte stream (the request is served as HTTP/1.1)",
            "c.yaml: routes[0].upgrades[1]: 'foo/1' is not a protocol name (an HTTP token such as websocket; no version)",
            "c.yaml: routes[0].upgrades[2]: '' is not a protocol name (an HTTP token such as websocket; no version)",
            "c.yaml: routes[0].maxUpgradedLifetime: must be greater than 0",
            "c.yaml: routes[1].upgrades: expected a list of protocol names (e.g. [websocket]), got a scalar value",
        ])
    }

    // MARK: - upstreamProtocol

    func testUpstreamProtocolIsAutoUnlessChosen() throws {
        let config = try XCTUnwrap(parseOK("""
            intercept: {caCertFile: /tmp/ca.crt}
            routes:
              - host: "a.test"
                upstream: "https://a.internal"
                upstreamProtocol: h2
              - host: "b.test"
                upstream: "http://127.0.0.1:50051"
                upstreamProtocol: h2c
              - host: "c.test"
                upstream: "https://c.internal"
                upstreamProtocol: http1
              - host: "orders.test:50051"
                intercept: true
                upstream: "http://127.0.0.1:50051"
                upstreamProtocol: h2c
              - host: "d.test"
            """))
        XCTAssertEqual(config.routes.map(\.upstreamProtocol), [.h2, .h2c, .http1, .h2c, .auto])
    }

    func testUpstreamProtocolMistakesAreNamedByKey() {
        XCTAssertEqual(problemLines("""
            routes:
              - host: "a.test"
                upstream: "http://a.internal"
                upstreamProtocol: h2
              - host: "b.test"
                upstream: "https://b.internal"
                upstreamProtocol: h2c
              - host: "c.test"
                upstreamProtocol: h2c
              - host: "d.test"
                upstream: "https://d.internal"
                upstreamProtocol: http2
            """), [
            "c.yaml: routes[0].upstreamProtocol: h2 is HTTP/2 over TLS: the upstream must be https:// (use h2c for plaintext HTTP/2); got http://a.internal:80",
            "c.yaml: routes[1].upstreamProtocol: h2c is plaintext HTTP/2: the upstream must be http:// (use h2 or auto for https); got https://b.internal:443",
            "c.yaml: routes[2].upstreamProtocol: h2c needs the route's upstream (a route without one sends each request where it asks to go, over HTTP/1.1)",
            "c.yaml: routes[3].upstreamProtocol: 'http2' is not one of auto, http1, h2, h2c (did you mean 'http1'?)",
        ])
    }
}
