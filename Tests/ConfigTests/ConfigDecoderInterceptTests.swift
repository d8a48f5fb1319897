import Config
import XCTest

/// `intercept:` and `routes[].intercept`: defaults, and every mistake named by its key.
final class ConfigDecoderInterceptTests: XCTestCase {
    func testAnExactRouteDefaultsToItsOwnDestinationOverTLSAndAWildcardToTheRequestedOne() throws {
        let directory = try makeTemporaryDirectory(self)
        let config = try XCTUnwrap(parseOK("""
            intercept: {caCertFile: \(directory.path)/ca.crt, caValidity: 48h}
            routes:
              - host: "api.example.com:443"
                intercept: true
              - host: "*.svc.example.com:8443"
                intercept: true
                caFile: /etc/ssl/certs/ca-certificates.crt
              - host: "plain.test"
            """))
        XCTAssertEqual(config.intercept, InterceptConfig(caCertFile: "\(directory.path)/ca.crt", caValidity: .seconds(48 * 3600)))
        XCTAssertEqual(config.routes[0].upstream?.description, "https://api.example.com:443")
        XCTAssertTrue(config.routes[0].intercept)
        XCTAssertNil(config.routes[1].upstream, "a wildcard goes to the name the app asked for")
        XCTAssertEqual(config.routes[1].tls.caFile, "/etc/ssl/certs/ca-certificates.crt")
        XCTAssertFalse(config.routes[2].intercept)
    }

    /// Port 80, written out: apps CONNECT there for `ws://` and `http://` URLs and speak
    /// plaintext inside, so the default upstream is the destination over plain HTTP, and an
    /// `http://` upstream is allowed.
    func testAnInterceptingRouteOnPort80IsPlaintext() throws {
        let directory = try makeTemporaryDirectory(self)
        let config = try XCTUnwrap(parseOK("""
            intercept: {caCertFile: \(directory.path)/ca.crt}
            routes:
              - host: "ws.example.com:80"
                intercept: true
              - host: "b.example.com:80"
                intercept: true
                upstream: "http://b.internal:8080"
              - host: "orders.internal:50051"
                intercept: true
                upstream: "http://127.0.0.1:50051"
            """))
        XCTAssertEqual(config.routes[0].upstream?.description, "http://ws.example.com:80")
        XCTAssertEqual(config.routes[1].upstream?.description, "http://b.internal:8080")
        XCTAssertEqual(config.routes[2].upstream?.description, "http://127.0.0.1:50051", "plaintext tunnels (h2c) on other ports")
    }

    func testMistakesAreNamedByKey() throws {
        let directory = try makeTemporaryDirectory(self)
        XCTAssertEqual(problemLines("""
            intercept: {caCertFile: \(directory.path)/ca.crt}
            routes:
              - host: "api.example.com"
                intercept: true
              - host: "b.example.com:443"
                intercept: true
                upstream: "http://b.internal:80"
              - host: "c.example.com:443"
                intercept: true
                insecureSkipVerify: true
            """), [
            "c.yaml: routes[0].intercept: an intercepting route names the port apps CONNECT to, e.g. host: \"api.example.com:443\" (or :80, written out, for ws:// and http:// URLs)",
            "c.yaml: routes[1].upstream: an intercepting route on port 443 sends to an https:// upstream (never weaker than the app's own connection); got http://b.internal:80",
            "c.yaml: routes[2].insecureSkipVerify: an intercepting route always verifies its upstream (the app's own connection would have); use caFile to trust a private CA",
        ])
        XCTAssertEqual(problemLines("""
            routes:
              - host: "api.example.com:443"
                intercept: true
            """), ["c.yaml: routes[0].intercept: needs the top-level intercept section (at least intercept.caCertFile: where the CA certificate apps trust is written)"])
        XCTAssertEqual(problemLines("intercept: {bundleFile: \(directory.path)/b.pem}\n"),
                       ["c.yaml: intercept.caCertFile: required key is missing: where the CA certificate apps trust is written (e.g. /run/token-sidecar/ca.crt)"])
        XCTAssertEqual(problemLines("intercept: {caCertFile: \(directory.path)/missing/ca.crt}\n"),
                       ["c.yaml: intercept.caCertFile: the directory \(directory.path)/missing does not exist; create it (e.g. an emptyDir the app also mounts)"])
        XCTAssertEqual(problemLines("intercept: {caCertFile: \(directory.path)/ca.crt, caKeyFile: \(directory.path)/none.key}\n"),
                       ["c.yaml: intercept.caCertFile: cannot read \(directory.path)/ca.crt: No such file or directory",
                        "c.yaml: intercept.caKeyFile: cannot read \(directory.path)/none.key: No such file or directory"])
        XCTAssertEqual(problemLines("intercept: {caCertFile: \(directory.path)/ca.crt, caValidity: 10m}\n"),
                       ["c.yaml: intercept.caValidity: must be at least 1h"])
    }
}
