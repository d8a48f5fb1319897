import Config
import Foundation
import XCTest

/// https upstreams and the TLS keys of routes and token servers.
final class ConfigDecoderTLSTests: XCTestCase {
    private func route(_ body: String, file: StaticString = #filePath, line: UInt = #line) -> RouteConfig? {
        parseOK("routes:\n  - host: a.test\n" + body, file: file, line: line)?.routes.first
    }

    private func routeProblems(_ body: String) -> [String] {
        problemLines("routes:\n  - host: a.test\n" + body)
    }

    func testHTTPSUpstreamWithDefaults() throws {
        let config = try XCTUnwrap(route("    upstream: \"https://Secure.Test\"\n"))
        XCTAssertEqual(config.upstream, UpstreamAddress(scheme: "https", host: "secure.test", port: 443))
        XCTAssertEqual(config.upstream?.authority, "secure.test")
        XCTAssertEqual(config.upstream?.isTLS, true)
        XCTAssertEqual(config.tls, .default)
        XCTAssertEqual(route("    upstream: \"https://secure.test:8443/\"\n")?.upstream?.authority, "secure.test:8443")
    }

    func testRouteTLSKeys() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate + FakePEM.certificate)
        let cert = try writeTemporaryFile(self, "client.pem", FakePEM.certificate)
        let key = try writeTemporaryFile(self, "client.key", FakePEM.key)
        let config = try XCTUnwrap(route("""
                upstream: "https://secure.test"
                caFile: "\(ca)"
                clientCert: "\(cert)"
                clientKey: "\(key)"
                insecureSkipVerify: false

            """))
        XCTAssertEqual(config.tls, TLSSettings(caFile: ca, clientCert: cert, clientKey: key, insecureSkipVerify: false))
        XCTAssertEqual(route("    upstream: \"https://secure.test\"\n    insecureSkipVerify: TRUE\n")?.tls,
                       TLSSettings(insecureSkipVerify: true))
    }

    func testTLSKeysNeedHTTPSUpstream() {
        XCTAssertEqual(routeProblems("    upstream: \"http://plain.test\"\n    insecureSkipVerify: true\n"), [
            "c.yaml: routes[0].insecureSkipVerify: TLS settings need an https:// URL (upstream is http://plain.test:80)",
        ])
        XCTAssertEqual(routeProblems("    insecureSkipVerify: false\n"), [
            "c.yaml: routes[0].insecureSkipVerify: TLS settings need an https:// URL "
                + "(this route has no upstream; requests go to the requested http destination)",
        ])
        // A broken upstream is reported once, not again through the TLS keys.
        XCTAssertEqual(routeProblems("    upstream: \"ftp://x.test\"\n    insecureSkipVerify: true\n"), [
            "c.yaml: routes[0].upstream: invalid upstream 'ftp://x.test': unsupported scheme 'ftp': only http:// and https:// upstreams are supported",
        ])
        // Null TLS keys count as not given.
        XCTAssertEqual(route("    upstream: \"http://plain.test\"\n    caFile:\n")?.tls, .default)
    }

    func testClientCertAndKeyGoTogether() throws {
        let cert = try writeTemporaryFile(self, "client.pem", FakePEM.certificate)
        XCTAssertEqual(routeProblems("    upstream: \"https://s.test\"\n    clientCert: \"\(cert)\"\n"), [
            "c.yaml: routes[0].clientCert: clientCert needs clientKey as well (a client certificate and its key go together)",
        ])
        let key = try writeTemporaryFile(self, "client.key", FakePEM.key)
        XCTAssertEqual(routeProblems("    upstream: \"https://s.test\"\n    clientKey: \"\(key)\"\n"), [
            "c.yaml: routes[0].clientKey: clientKey needs clientCert as well (a client certificate and its key go together)",
        ])
    }

    func testPEMFileProblems() throws {
        let notPEM = try writeTemporaryFile(self, "ca.der", "SENTINEL-KEY-123 not a pem file")
        let encrypted = try writeTemporaryFile(self, "enc.key", FakePEM.encryptedKey)
        let cert = try writeTemporaryFile(self, "client.pem", FakePEM.certificate)
        let dir = try makeTemporaryDirectory(self)
        let cases: [(String, String)] = [
            ("caFile: /nonexistent/ca.pem", "caFile: cannot read CA file /nonexistent/ca.pem: no such file"),
            ("caFile: \"\(dir.path)\"", "caFile: cannot read CA file \(dir.path): is a directory, not a file"),
            ("caFile: \"\"", "caFile: is empty; expected the path of a PEM file"),
            ("caFile: \"\(notPEM)\"", "caFile: CA file \(notPEM) contains no PEM certificate (-----BEGIN CERTIFICATE-----)"),
            ("clientCert: \"\(notPEM)\"\n    clientKey: \"\(cert)\"",
             "clientCert: client certificate file \(notPEM) contains no PEM certificate (-----BEGIN CERTIFICATE-----)"),
            ("clientCert: \"\(cert)\"\n    clientKey: \"\(encrypted)\"",
             "clientKey: private key file \(encrypted) is encrypted; an unencrypted private key is needed"),
            ("insecureSkipVerify: yes", "insecureSkipVerify: expected true or false, got 'yes'"),
        ]
        for (body, message) in cases {
            var expected = ["c.yaml: routes[0].\(message)"]
            if body.hasPrefix("clientCert: \"\(notPEM)") {
                expected.append("c.yaml: routes[0].clientKey: private key file \(cert) contains no PEM private key (-----BEGIN ... PRIVATE KEY-----)")
            }
            let lines = routeProblems("    upstream: \"https://s.test\"\n    \(body)\n")
            XCTAssertEqual(lines, expected, body)
            XCTAssertFalse(lines.joined().contains("SENTINEL"))
        }
    }

    func testRelativePEMPathsResolveAgainstConfigDirectory() throws {
        let dir = try makeTemporaryDirectory(self)
        try FakePEM.certificate.write(to: dir.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        let configPath = dir.appendingPathComponent("sidecar.yaml").path
        try "routes:\n  - host: a.test\n    upstream: \"https://s.test\"\n    caFile: ca.pem\n"
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        let config = try ConfigLoader.load(path: configPath, environment: [:])
        XCTAssertEqual(config.routes.first?.tls.caFile, dir.appendingPathComponent("ca.pem").standardizedFileURL.path)
    }

    func testCredentialTLSKeys() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let yaml = """
            credentials:
              mca:
                type: mca
                serverUrl: https://m.test
                tenantId: t
                clientId: c
                secret: s
                caFile: "\(ca)"
            """
        guard case .mca(let config) = parseOK(yaml)?.credentials.first?.kind else { return XCTFail("no mca credential") }
        XCTAssertEqual(config.tls, TLSSettings(caFile: ca))
    }

    func testUnknownRouteKeySuggestsTLSKeys() {
        XCTAssertEqual(routeProblems("    upstream: \"https://s.test\"\n    cafile: x\n"), [
            "c.yaml: routes[0].cafile: unknown key (did you mean 'caFile'?)",
        ])
    }
}
