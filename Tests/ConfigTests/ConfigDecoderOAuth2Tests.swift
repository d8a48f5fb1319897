import Config
import Foundation
import XCTest

/// Validation of `type: oauth2` credentials.
final class ConfigDecoderOAuth2Tests: XCTestCase {
    private let minimal = """
        credentials:
          partner:
            type: oauth2
            tokenUrl: "https://idp.example.com/oauth/token"
            clientId: "client-1"
            secret: "SENTINEL-SECRET-123"

        """

    private func oauth2(_ yaml: String, environment: [String: String] = [:], file: StaticString = #filePath, line: UInt = #line) -> OAuth2Config? {
        guard case .oauth2(let config) = parseOK(yaml, environment: environment, file: file, line: line)?.credentials.first?.kind else {
            return nil
        }
        return config
    }

    private func credential(_ body: String, environment: [String: String] = [:]) -> [String] {
        problemLines("credentials:\n  partner:\n    type: oauth2\n" + body, environment: environment)
    }

    func testDefaults() throws {
        let config = try XCTUnwrap(oauth2(minimal))
        XCTAssertEqual(config, OAuth2Config(
            tokenUrl: EndpointURL(scheme: "https", host: "idp.example.com", port: 443, path: "/oauth/token"),
            clientId: "client-1", secret: .inline("SENTINEL-SECRET-123")))
        XCTAssertEqual(config.auth, .basic)
        XCTAssertNil(config.scope)
        XCTAssertNil(config.audience)
        XCTAssertNil(config.resource)
        XCTAssertEqual(config.params, [])
        XCTAssertEqual(config.fetch, .default)
        XCTAssertEqual(config.tls, .default)
    }

    func testEveryKey() throws {
        let yaml = minimal + """
                auth: post
                scope: "read write"
                audience: "https://api.example.com/"
                resource: "urn:example:api"
                params:
                  zeta: "1"
                  alpha: 2
                  empty: ""
                refreshAt: 75%
                defaultLifetime: 10m
                tokenWait: 2s
                insecureSkipVerify: true

            """
        let config = try XCTUnwrap(oauth2(yaml))
        XCTAssertEqual(config, OAuth2Config(
            tokenUrl: EndpointURL(scheme: "https", host: "idp.example.com", path: "/oauth/token"),
            clientId: "client-1", secret: .inline("SENTINEL-SECRET-123"), auth: .post,
            scope: "read write", audience: "https://api.example.com/", resource: "urn:example:api",
            params: [FormParameter(name: "zeta", value: "1"), FormParameter(name: "alpha", value: "2"), FormParameter(name: "empty", value: "")],
            fetch: TokenFetchSettings(refreshAt: 0.75, defaultLifetime: .seconds(600), tokenWait: .seconds(2)),
            tls: TLSSettings(insecureSkipVerify: true)))
    }

    func testHTTPTokenURL() throws {
        let config = try XCTUnwrap(oauth2(minimal.replacingOccurrences(of: "https://idp.example.com", with: "http://127.0.0.1:9000")))
        XCTAssertEqual(config.tokenUrl.authority, "127.0.0.1:9000")
        XCTAssertEqual(config.tokenUrl.path, "/oauth/token")
    }

    func testMissingRequiredKeys() {
        XCTAssertEqual(credential("    scope: x\n"), [
            "c.yaml: credentials.partner.tokenUrl: required key is missing (e.g. tokenUrl: https://idp.example.com/oauth/token)",
            "c.yaml: credentials.partner.clientId: required key is missing",
            "c.yaml: credentials.partner: an oauth2 credential with auth: basic needs exactly one of secret, secretFile or secretEnv; none is given",
        ])
    }

    func testMoreThanOneSecretSource() {
        let lines = credential("    tokenUrl: https://i.test\n    clientId: c\n    secret: SENTINEL-SECRET-123\n    secretFile: /x\n")
        XCTAssertEqual(lines, [
            "c.yaml: credentials.partner: an oauth2 credential with auth: basic needs exactly one of secret, secretFile or secretEnv; found secret and secretFile",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
    }

    func testSecretFileRelativeToConfigDirectory() throws {
        let dir = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("secrets"), withIntermediateDirectories: true)
        try "s3cret\n".write(to: dir.appendingPathComponent("secrets/partner"), atomically: true, encoding: .utf8)
        let configPath = dir.appendingPathComponent("sidecar.yaml").path
        try minimal.replacingOccurrences(of: "secret: \"SENTINEL-SECRET-123\"", with: "secretFile: secrets/partner")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        guard case .oauth2(let config) = try ConfigLoader.load(path: configPath, environment: [:]).credentials.first?.kind else {
            return XCTFail("no oauth2 credential")
        }
        XCTAssertEqual(config.secret, .file(dir.appendingPathComponent("secrets/partner").standardizedFileURL.path))
    }

    func testBadTokenURLs() {
        let cases: [(String, String)] = [
            ("https://idp.test/token?client_id=x", "invalid URL: URL must not have a query (put extra form parameters under params)"),
            ("https://idp.test/token#x", "invalid URL: URL must not have a fragment"),
            ("ftp://idp.test/token", "invalid URL: unsupported scheme 'ftp': expected http:// or https://"),
            ("https://client:SENTINEL-SECRET-123@idp.test/token", "invalid URL: URL must not contain userinfo (user@)"),
            ("", "invalid URL: expected a URL like https://host[:port]/path"),
        ]
        for (url, message) in cases {
            let lines = credential("    tokenUrl: \"\(url)\"\n    clientId: c\n    secret: s\n")
            XCTAssertEqual(lines, ["c.yaml: credentials.partner.tokenUrl: \(message)"], url)
            XCTAssertFalse(lines.joined().contains("SENTINEL"))
        }
    }

    func testAuthMethod() {
        XCTAssertEqual(oauth2(minimal + "    auth: basic\n")?.auth, .basic)
        XCTAssertEqual(problemLines(minimal + "    auth: Basic\n"), [
            "c.yaml: credentials.partner.auth: 'Basic' is not one of basic, post, private_key_jwt, client_secret_jwt, assertion_file, tls_client_auth, self_signed_tls_client_auth, none (did you mean 'basic'?)",
        ])
        XCTAssertEqual(problemLines(minimal + "    auth: mtls\n"), [
            "c.yaml: credentials.partner.auth: 'mtls' is not one of basic, post, private_key_jwt, client_secret_jwt, assertion_file, tls_client_auth, self_signed_tls_client_auth, none",
        ])
    }

    func testOptionalParameters() {
        XCTAssertEqual(problemLines(minimal + "    scope: \"\"\n    audience: \"a\\nb\"\n    resource: api.example.com\n"), [
            "c.yaml: credentials.partner.scope: is empty; omit the key to send no scope",
            "c.yaml: credentials.partner.audience: contains control characters",
            "c.yaml: credentials.partner.resource: must be an absolute URI without a fragment, e.g. https://api.example.com (RFC 8707)",
        ])
        XCTAssertEqual(problemLines(minimal + "    resource: \"https://api.test/#x\"\n"), [
            "c.yaml: credentials.partner.resource: must be an absolute URI without a fragment, e.g. https://api.example.com (RFC 8707)",
        ])
        XCTAssertNil(oauth2(minimal + "    scope:\n")?.scope)
    }

    func testBadParams() {
        XCTAssertEqual(problemLines(minimal + "    params: [a]\n"), [
            "c.yaml: credentials.partner.params: expected a mapping of form parameter names to string values, got a list",
        ])
        let lines = problemLines(minimal + """
                params:
                  grant_type: password
                  scope: x
                  client_secret: SENTINEL-SECRET-123
                  nested: {a: SENTINEL-SECRET-123}

            """)
        XCTAssertEqual(lines, [
            "c.yaml: credentials.partner.params.grant_type: grant_type cannot be given under params; token-sidecar sets it itself",
            "c.yaml: credentials.partner.params.scope: scope cannot be given under params; use the scope key of the credential instead",
            "c.yaml: credentials.partner.params.client_secret: client_secret cannot be given under params; token-sidecar sets it itself",
            "c.yaml: credentials.partner.params.nested: expected a string, got a mapping",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
        XCTAssertEqual(oauth2(minimal + "    params: {}\n")?.params, [])
        XCTAssertEqual(oauth2(minimal + "    params:\n")?.params, [])
    }

    func testUnknownKeys() {
        XCTAssertEqual(problemLines(minimal + "    scopes: x\n    token_url: y\n"), [
            "c.yaml: credentials.partner.scopes: unknown key (did you mean 'scope'?)",
            "c.yaml: credentials.partner.token_url: unknown key (did you mean 'tokenUrl'?)",
        ])
    }

    func testTLSKeysNeedHTTPSTokenURL() {
        let yaml = minimal.replacingOccurrences(of: "https://", with: "http://") + "    insecureSkipVerify: true\n"
        XCTAssertEqual(problemLines(yaml), [
            "c.yaml: credentials.partner.insecureSkipVerify: TLS settings need an https:// URL (tokenUrl is http://idp.example.com:80/oauth/token)",
        ])
    }
}
