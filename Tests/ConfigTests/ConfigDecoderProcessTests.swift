import Config
import XCTest

/// Top-level process settings: cacheSize, maxConnectionsPerUpstream, timeouts, connect.
final class ConfigDecoderProcessTests: XCTestCase {
    func testDefaults() throws {
        let config = try XCTUnwrap(parseOK("routes: []\n"))
        XCTAssertEqual(config.cacheSize, 100)
        XCTAssertEqual(config.maxConnectionsPerUpstream, 256)
        XCTAssertNil(config.maxClientConnections, "derived from the descriptor limit at start")
        XCTAssertEqual(config.connectPolicy, .deny)
        XCTAssertEqual(config.timeouts, .default)
        XCTAssertEqual(Timeouts.default, Timeouts(
            connect: .seconds(5), responseHeaders: .seconds(60), clientHeader: .seconds(10),
            idle: .seconds(60), upstreamIdle: .seconds(30), bodyIdle: .seconds(60)))
        XCTAssertEqual(parseOK("timeouts:\nconnect:\ncacheSize: ~\n"), SidecarConfig(file: "c.yaml"))
    }

    func testSpool() {
        XCTAssertEqual(parseOK("routes: []\n")?.spool, SpoolConfig(directory: "/tmp", maxBytes: 1 << 30))
        XCTAssertEqual(parseOK("spool: {directory: /var/spool/ts, maxBytes: 512MiB}")?.spool,
                       SpoolConfig(directory: "/var/spool/ts", maxBytes: 512 << 20))
        XCTAssertEqual(parseOK("spool: {maxBytes: 0}")?.spool.maxBytes, 0, "0 turns spooling off")
        XCTAssertEqual(parseOK("spool: {maxBytes: 1048576}")?.spool.maxBytes, 1 << 20)
        XCTAssertEqual(parseOK("spool: {maxBytes: 2G}")?.spool.maxBytes, 2 << 30)
        XCTAssertEqual(parseOK("spool: {maxBytes: 64 KiB}")?.spool.maxBytes, 64 << 10)
        XCTAssertEqual(problemLines("spool: {maxBytes: lots}"), [
            "c.yaml: spool.maxBytes: expected a number of bytes such as 1073741824 or 1GiB (0 turns spooling off), got 'lots'",
        ])
        XCTAssertEqual(problemLines("spool: {maxBytes: -1}").count, 1, "negative sizes are refused")
        XCTAssertEqual(problemLines("spool: {maxBytes: 99999999999999GiB}").count, 1, "an overflowing size is refused")
        XCTAssertEqual(problemLines("spool: {directory: \"\"}"), ["c.yaml: spool.directory: must not be empty"])
        XCTAssertEqual(problemLines("spool: {dir: /tmp}"), ["c.yaml: spool.dir: unknown key (known keys: directory, maxBytes)"])
    }

    func testRelativeSpoolDirectoryResolvesAgainstTheConfigFile() throws {
        let directory = try makeTemporaryDirectory(self)
        let file = directory.appendingPathComponent("sidecar.yaml")
        try "spool: {directory: spool}\n".write(to: file, atomically: true, encoding: .utf8)
        let config = try ConfigLoader.load(path: file.path, environment: [:])
        XCTAssertEqual(config.spool.directory, directory.appendingPathComponent("spool").path)
    }

    func testCacheSize() {
        XCTAssertEqual(parseOK("cacheSize: 1")?.cacheSize, 1)
        XCTAssertEqual(parseOK("cacheSize: 100000")?.cacheSize, 100_000)
        XCTAssertEqual(problemLines("cacheSize: 0"), ["c.yaml: cacheSize: must be between 1 and 100000 (got 0)"])
        XCTAssertEqual(problemLines("cacheSize: 100001"), ["c.yaml: cacheSize: must be between 1 and 100000 (got 100001)"])
        XCTAssertEqual(problemLines("cacheSize: lots"), ["c.yaml: cacheSize: expected an integer, got 'lots'"])
    }

    func testMaxConnectionsPerUpstream() {
        XCTAssertEqual(parseOK("maxConnectionsPerUpstream: 8")?.maxConnectionsPerUpstream, 8)
        XCTAssertEqual(problemLines("maxConnectionsPerUpstream: 0"), [
            "c.yaml: maxConnectionsPerUpstream: must be between 1 and 100000 (got 0)",
        ])
        XCTAssertEqual(problemLines("maxConnectionsPerUpstream: -1"), [
            "c.yaml: maxConnectionsPerUpstream: must be between 1 and 100000 (got -1)",
        ])
    }

    func testMaxClientConnections() {
        XCTAssertEqual(parseOK("maxClientConnections: 1")?.maxClientConnections, 1)
        XCTAssertEqual(parseOK("maxClientConnections: 1000000")?.maxClientConnections, 1_000_000)
        XCTAssertEqual(parseOK("maxClientConnections: ~")?.maxClientConnections, nil)
        XCTAssertEqual(problemLines("maxClientConnections: 0"), [
            "c.yaml: maxClientConnections: must be between 1 and 1000000 (got 0)",
        ])
        XCTAssertEqual(problemLines("maxClientConnections: 1000001"), [
            "c.yaml: maxClientConnections: must be between 1 and 1000000 (got 1000001)",
        ])
        XCTAssertEqual(problemLines("maxClientConnections: many"), [
            "c.yaml: maxClientConnections: expected an integer, got 'many'",
        ])
        XCTAssertEqual(problemLines("maxClientConection: 5"), [
            "c.yaml: maxClientConection: unknown key (did you mean 'maxClientConnections'?)",
        ])
    }

    func testDerivedClientConnectionLimit() {
        XCTAssertEqual(ClientConnectionLimit.derived(descriptorLimit: 256), 96, "half of (256 - 64)")
        XCTAssertEqual(ClientConnectionLimit.derived(descriptorLimit: 1024), 480)
        XCTAssertEqual(ClientConnectionLimit.derived(descriptorLimit: 65), 1)
        XCTAssertEqual(ClientConnectionLimit.derived(descriptorLimit: 10), 1)
        XCTAssertEqual(ClientConnectionLimit.share(of: 96, workers: 1), 96)
        XCTAssertEqual(ClientConnectionLimit.share(of: 5, workers: 2), 3, "rounded up")
        XCTAssertEqual(ClientConnectionLimit.share(of: 2, workers: 4), 1, "every worker may hold one")
    }

    func testTimeouts() throws {
        let config = try XCTUnwrap(parseOK("""
            timeouts:
              connect: 1s
              responseHeaders: 2m
              clientHeader: 500ms
              idle: 1h
              upstreamIdle: 15s
              bodyIdle: 1.5s
            """))
        XCTAssertEqual(config.timeouts, Timeouts(
            connect: .seconds(1), responseHeaders: .seconds(120), clientHeader: .milliseconds(500),
            idle: .seconds(3600), upstreamIdle: .seconds(15), bodyIdle: .milliseconds(1500)))
        XCTAssertEqual(parseOK("timeouts:\n  idle: 5m\n")?.timeouts, Timeouts(idle: .seconds(300)))
    }

    func testBadTimeouts() {
        XCTAssertEqual(problemLines("timeouts:\n  connect: 0s\n  idle: 5\n  upstreamidle: 1s\n  bodyIdle: -1s\n"), [
            "c.yaml: timeouts.connect: must be greater than 0",
            "c.yaml: timeouts.idle: duration '5' has no unit: expected a number followed by ms, s, m or h, e.g. 500ms, 5s, 1.5m",
            "c.yaml: timeouts.upstreamidle: unknown key (did you mean 'upstreamIdle'?)",
            "c.yaml: timeouts.bodyIdle: duration must not be negative",
        ])
        XCTAssertEqual(problemLines("timeouts: 5s\n"), ["c.yaml: timeouts: expected a mapping of timeout names to durations, got a scalar value"])
    }

    func testConnectDeny() {
        XCTAssertEqual(parseOK("connect: deny")?.connectPolicy, .deny)
    }

    func testConnectAllow() {
        XCTAssertEqual(parseOK("connect:\n  allow: [\"API.Example.com.:443\", \"[::1]:8443\", \"10.0.0.1:22\"]\n")?.connectPolicy,
                       .allow(["api.example.com:443", "[::1]:8443", "10.0.0.1:22"]))
        XCTAssertEqual(parseOK("connect: {allow: [\"a.test:8443\"]}")?.connectPolicy, .allow(["a.test:8443"]))
    }

    func testBadConnect() {
        XCTAssertEqual(problemLines("connect: allow"), [
            "c.yaml: connect: expected deny or a mapping like {allow: [\"example.com:443\"]}, got 'allow'; list the allowed destinations under allow",
        ])
        XCTAssertEqual(problemLines("connect: [a.test:443]"), [
            "c.yaml: connect: expected deny or a mapping like {allow: [\"example.com:443\"]}, got a list",
        ])
        XCTAssertEqual(problemLines("connect: {alow: []}"), [
            "c.yaml: connect.alow: unknown key (did you mean 'allow'?)",
            "c.yaml: connect.allow: required key is missing (or write connect: deny)",
        ])
        XCTAssertEqual(problemLines("connect: {allow: []}"), [
            "c.yaml: connect.allow: is empty; write connect: deny to refuse every CONNECT request",
        ])
        XCTAssertEqual(problemLines("connect: {allow: a.test:443}"), [
            "c.yaml: connect.allow: expected a list of host:port entries, got a scalar value",
        ])
        XCTAssertEqual(problemLines("""
            connect:
              allow:
                - a.test
                - "a.test:0"
                - "*.a.test:443"
                - "http://a.test:443"
                - "::1:443"
                - ""
                - b.test:443
                - B.test.:443
                - [x]
            """), [
            "c.yaml: connect.allow[0]: invalid entry 'a.test': expected host:port with an explicit port, e.g. example.com:443",
            "c.yaml: connect.allow[1]: invalid entry 'a.test:0': invalid port '0': expected a number from 1 to 65535",
            "c.yaml: connect.allow[2]: invalid entry '*.a.test:443': host name '*.a.test' contains the invalid character '*'",
            "c.yaml: connect.allow[3]: invalid entry 'http://a.test:443': write just host:port, without a scheme or path",
            "c.yaml: connect.allow[4]: invalid entry '::1:443': IPv6 addresses must be written in brackets, e.g. [::1]:8080",
            "c.yaml: connect.allow[5]: invalid entry '': entry has no host",
            "c.yaml: connect.allow[7]: duplicate entry b.test:443 (already connect.allow[6])",
            "c.yaml: connect.allow[8]: expected a string, got a list",
        ])
    }
}
