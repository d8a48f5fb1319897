import Config
import XCTest

/// `routes[].inject` and `credentials.<name>.placeholder`/`placeholderFile`.
final class ConfigDecoderInjectTests: XCTestCase {
    private let credentials = "credentials:\n  api:\n    type: static\n    token: t\n"

    private func route(_ inject: String, extra: String = "") -> String {
        credentials + "routes:\n  - host: api.test\n    credential: api\n    inject: \(inject)\n" + extra
    }

    func testEachPlacementDecodes() {
        XCTAssertEqual(parseOK(route("{header: x-api-key}"))?.routes.first?.placement, .header(name: "x-api-key", prefix: "", suffix: ""))
        XCTAssertEqual(parseOK(route("{header: Authorization, format: \"token {token}\"}"))?.routes.first?.placement,
                       .header(name: "Authorization", prefix: "token ", suffix: ""))
        XCTAssertEqual(parseOK(route("{query: key}"))?.routes.first?.placement, .query(name: "key"))
        XCTAssertEqual(parseOK(route("{basic: {username: \"{token}\", password: \"\"}}"))?.routes.first?.placement,
                       .basic(.tokenAsUsername(password: "")))
        XCTAssertEqual(parseOK(route("{basic: {username: api, password: \"{token}\"}}"))?.routes.first?.placement,
                       .basic(.tokenAsPassword(username: "api")))
        XCTAssertEqual(parseOK(route("{basic: pair}"))?.routes.first?.placement, .basic(.pair))
    }

    func testTheDefaultSpelledOutIsTheDefault() {
        let config = parseOK(route("{header: Authorization}"))
        XCTAssertEqual(config?.routes.count, 1)
        XCTAssertNil(config?.routes.first?.placement)
        XCTAssertNil(parseOK(route("{header: authorization, format: \"Bearer {token}\"}"))?.routes.first?.placement)
    }

    func testBadPlacementsNameTheKeyAndTheProblem() {
        let cases: [(String, String)] = [
            ("{}", "c.yaml: routes[0].inject: needs exactly one of header, query, basic or sigv4; none is given"),
            ("{header: a, query: b}", "c.yaml: routes[0].inject: needs exactly one of header, query, basic or sigv4; found header and query"),
            ("{header: \"x api\"}", "c.yaml: routes[0].inject.header: 'x api' is not an HTTP field name (letters, digits and !#$%&'*+-.^_`|~), e.g. x-api-key"),
            ("{header: Host}", "c.yaml: routes[0].inject.header: Host is a field the proxy writes or removes itself; choose the field the API reads the key from"),
            ("{header: x-k, format: \"Bearer\"}", "c.yaml: routes[0].inject.format: must contain {token} exactly once, e.g. \"Bearer {token}\" or \"{token}\""),
            ("{header: x-k, format: \"{token}{token}\"}", "c.yaml: routes[0].inject.format: must contain {token} exactly once, e.g. \"Bearer {token}\" or \"{token}\""),
            ("{header: x-k, format: \"a\\n{token}\"}", "c.yaml: routes[0].inject.format: must not contain CR, LF, NUL or other control characters"),
            ("{query: \"k&x\"}", "c.yaml: routes[0].inject.query: 'k&x' must be a query parameter name of letters, digits and '-', '.', '_', '~', e.g. key"),
            ("{query: k, format: x}", "c.yaml: routes[0].inject.format: only applies to inject: {header: …}"),
            ("{basic: both}", "c.yaml: routes[0].inject.basic: expected pair (the token is user:secret) or {username: …, password: …} with {token} as one of them"),
            ("{basic: {username: a, password: b}}", "c.yaml: routes[0].inject.basic: exactly one of username and password is \"{token}\" (the other is fixed text, \"\" for none)"),
            ("{basic: {username: \"a:b\", password: \"{token}\"}}", "c.yaml: routes[0].inject.basic.username: must not contain ':' (RFC 7617 §2: the first ':' ends the user)"),
            ("{basic: {username: \"{token}\"}}", "c.yaml: routes[0].inject.basic.password: required key is missing (\"\" for none)"),
            ("{heder: x}", "c.yaml: routes[0].inject.heder: unknown key (did you mean 'header'?)"),
        ]
        for (inject, expected) in cases {
            XCTAssertTrue(problemLines(route(inject)).contains(expected), "\(inject): \(problemLines(route(inject)))")
        }
    }

    func testInjectNeedsACredentialAndReplaceAndNoDPoP() {
        XCTAssertTrue(problemLines(credentials + "routes:\n  - host: a.test\n    inject: {header: x-k}\n")
            .contains("c.yaml: routes[0].inject: only applies to a route with a credential (nothing is injected here)"))
        XCTAssertTrue(problemLines(route("{header: x-k}", extra: "    clientAuthorization: keep\n"))
            .contains("c.yaml: routes[0].inject: does not combine with clientAuthorization: keep (the app's own Authorization or its exchange decides what goes)"))
    }

    func testPlaceholders() throws {
        let yaml = "credentials:\n  a:\n    type: static\n    token: t\n    placeholder: tsp_0123456789abcdef\n"
        XCTAssertEqual(parseOK(yaml)?.credentials.first?.placeholder, .value("tsp_0123456789abcdef"))
        let file = "credentials:\n  a:\n    type: static\n    token: t\n    placeholderFile: /run/p\n"
        XCTAssertEqual(parseOK(file)?.credentials.first?.placeholder, .file("/run/p"))
        XCTAssertEqual(problemLines("credentials:\n  a:\n    type: static\n    token: t\n    placeholder: short\n"),
                       ["c.yaml: credentials.a.placeholder: must be at least 16 characters long"])
        XCTAssertEqual(problemLines("credentials:\n  a:\n    type: static\n    token: t\n    placeholder: \"has:colon-and-more-text\"\n"),
                       ["c.yaml: credentials.a.placeholder: may contain only letters, digits and '-', '.', '_', '~' (it must pass through a URL and a Basic pair unchanged)"])
        XCTAssertEqual(problemLines("credentials:\n  a:\n    type: static\n    token: t\n    placeholder: tsp_0123456789abcdef\n"
                                    + "  b:\n    type: static\n    token: u\n    placeholder: tsp_0123456789abcdef\n"),
                       ["c.yaml: credentials.b.placeholder: is the same as credentials.a's: each credential needs its own placeholder"])
        XCTAssertEqual(problemLines("credentials:\n  a:\n    type: static\n    token: t\n    placeholder: tsp_0123456789abcdef\n    placeholderFile: /p\n"),
                       ["c.yaml: credentials.a: give one of placeholder and placeholderFile, not both"])
    }

    func testCheckShowsPlacementsAndMasksPlaceholdersAndLoadsBack() throws {
        let yaml = "credentials:\n  a:\n    type: static\n    token: t\n    placeholder: tsp_0123456789abcdef\n"
            + "routes:\n  - host: a.test\n    credential: a\n    inject: {basic: {username: api, password: \"{token}\"}}\n"
            + "  - host: b.test\n    credential: a\n"
            + "  - host: c.test\n    credential: a\n    inject: {query: key}\n"
        let config = try XCTUnwrap(parseOK(yaml))
        let text = config.renderEffective()
        XCTAssertTrue(text.contains("inject: {basic: {username: \"api\", password: \"{token}\"}}"), text)
        XCTAssertTrue(text.contains("inject: {header: \"Authorization\", format: \"Bearer {token}\"}"), text)
        XCTAssertTrue(text.contains("inject: {query: \"key\"}"), text)
        XCTAssertTrue(text.contains("placeholder: \"****\""), text)
        XCTAssertFalse(text.contains("tsp_0123456789abcdef"))
        let again = try XCTUnwrap(parseOK(text.replacingOccurrences(of: "\"****\"", with: "tsp_0123456789abcdef")))
        XCTAssertEqual(again.routes.map(\.placement), config.routes.map(\.placement))
    }
}

/// `grant: jwt_bearer`.
final class ConfigDecoderJWTBearerTests: XCTestCase {
    private func credential(_ lines: String) -> String {
        "credentials:\n  c:\n    type: oauth2\n    tokenUrl: https://idp.test/token\n    clientId: app\n" + lines
    }

    func testDecodesWithAnyClientAuthenticationButClientSecretJWT() throws {
        let key = try writeTemporaryFile(self, "k.pem", FakePEM.key)
        let config = parseOK(credential("    auth: none\n    grant: jwt_bearer\n    assertionSubject: user\n    signingKeyFile: \(key)\n"))
        guard case .oauth2(let oauth)? = config?.credentials.first?.kind else { return XCTFail("not decoded") }
        XCTAssertEqual(oauth.grant, OAuth2Grant.jwtBearer(subject: "user"))
        XCTAssertEqual(oauth.assertion?.signingKeyFile, key)
        XCTAssertNotNil(parseOK(credential("    secret: s\n    grant: jwt_bearer\n    signingKeyFile: \(key)\n")))
        XCTAssertTrue(problemLines(credential("    secret: s\n    auth: client_secret_jwt\n    grant: jwt_bearer\n"))
            .contains("c.yaml: credentials.c.auth: grant: jwt_bearer signs its assertion with signingKeyFile; authenticate the client with basic, post, private_key_jwt or none"))
    }

    func testTheKeyIsRequiredAndTheSubjectBelongsToTheGrant() {
        XCTAssertTrue(problemLines(credential("    auth: none\n    grant: jwt_bearer\n"))
            .contains("c.yaml: credentials.c.signingKeyFile: required key is missing: grant: jwt_bearer signs with this PEM private key (RSA for RS256, EC P-256 for ES256)"))
        XCTAssertTrue(problemLines(credential("    secret: s\n    assertionSubject: u\n"))
            .contains("c.yaml: credentials.c.assertionSubject: is only used with grant: jwt_bearer"))
        XCTAssertTrue(problemLines(credential("    secret: s\n    grant: jwt_barer\n"))
            .contains("c.yaml: credentials.c.grant: 'jwt_barer' is not one of client_credentials, token_exchange, jwt_bearer, refresh_token (did you mean 'jwt_bearer'?)"))
    }
}

/// `type: google_service_account`.
final class ConfigDecoderGoogleServiceAccountTests: XCTestCase {
    private let key = #"{"type": "service_account", "private_key": "k", "client_email": "a@b", "token_uri": "https://oauth2.googleapis.com/token"}"#

    func testDecodesAndRendersWithoutTheKey() throws {
        let path = try writeTemporaryFile(self, "sa.json", key)
        let config = try XCTUnwrap(parseOK("credentials:\n  gcp:\n    type: google_service_account\n    keyFile: \(path)\n    scope: s\n"))
        guard case .googleServiceAccount(let google)? = config.credentials.first?.kind else { return XCTFail("not decoded") }
        XCTAssertEqual(google.keyFile, path)
        XCTAssertEqual(google.scope, "s")
        let text = config.renderEffective()
        XCTAssertTrue(text.contains("type: google_service_account") && text.contains("keyFile: \"\(path)\""), text)
        XCTAssertNotNil(parseOK(text))
    }

    func testProblemsNameTheFieldNeverTheKey() throws {
        let path = try writeTemporaryFile(self, "sa.json", key)
        let notJSON = try writeTemporaryFile(self, "bad.json", "SENTINEL")
        let user = try writeTemporaryFile(self, "user.json", #"{"type": "authorized_user", "refresh_token": "SENTINEL"}"#)
        let cases: [(String, String)] = [
            ("    scope: s\n", "c.yaml: credentials.gcp.keyFile: required key is missing: the service account's JSON key file (with private_key, client_email, token_uri)"),
            ("    keyFile: \(path)\n", "c.yaml: credentials.gcp: a google_service_account credential needs exactly one of scope (an access token) or targetAudience (an ID token); none is given"),
            ("    keyFile: \(path)\n    scope: s\n    targetAudience: a\n", "c.yaml: credentials.gcp: a google_service_account credential needs exactly one of scope (an access token) or targetAudience (an ID token); found scope and targetAudience"),
            ("    keyFile: \(notJSON)\n    scope: s\n", "c.yaml: credentials.gcp.keyFile: \(notJSON) is not a JSON object (expected a service account key file)"),
            ("    keyFile: \(user)\n    scope: s\n", "c.yaml: credentials.gcp.keyFile: \(user) is a key of type authorized_user, not service_account"),
            ("    keyFile: \(path)\n    scope: s\n    grant: jwt_bearer\n", "c.yaml: credentials.gcp.grant: only an oauth2 credential has a grant (token exchange); this one is type: google_service_account"),
        ]
        for (lines, expected) in cases {
            let problems = problemLines("credentials:\n  gcp:\n    type: google_service_account\n" + lines)
            XCTAssertTrue(problems.contains(expected), "\(problems)")
            XCTAssertFalse(problems.joined().contains("SENTINEL"))
        }
    }
}

/// `grant: refresh_token`.
final class ConfigDecoderRefreshTokenTests: XCTestCase {
    private func credential(_ lines: String) -> String {
        "credentials:\n  c:\n    type: oauth2\n    tokenUrl: https://idp.test/token\n    clientId: app\n" + lines
    }

    func testDecodesWithASecretOrAsAPublicClientAndRendersItsFile() throws {
        let config = try XCTUnwrap(parseOK(credential("    secret: s\n    grant: refresh_token\n    refreshTokenFile: /var/lib/ts/c.refresh\n")))
        guard case .oauth2(let oauth)? = config.credentials.first?.kind else { return XCTFail("not decoded") }
        XCTAssertEqual(oauth.grant, OAuth2Grant.refreshToken(file: "/var/lib/ts/c.refresh"))
        XCTAssertTrue(config.renderEffective().contains("refreshTokenFile: \"/var/lib/ts/c.refresh\""))
        XCTAssertNotNil(parseOK(config.renderEffective().replacingOccurrences(of: "\"****\"", with: "s")))
        XCTAssertNotNil(parseOK(credential("    auth: none\n    grant: refresh_token\n    refreshTokenFile: r\n")), "a public client")
    }

    func testTheFileIsRequiredAndBelongsToTheGrant() {
        XCTAssertTrue(problemLines(credential("    secret: s\n    grant: refresh_token\n"))
            .contains("c.yaml: credentials.c.refreshTokenFile: required key is missing: grant: refresh_token reads the refresh token from this file and writes each rotated one back"))
        XCTAssertTrue(problemLines(credential("    secret: s\n    refreshTokenFile: r\n"))
            .contains("c.yaml: credentials.c.refreshTokenFile: is only used with grant: refresh_token"))
        XCTAssertTrue(problemLines("credentials:\n  s:\n    type: static\n    token: t\n    refreshTokenFile: r\n")
            .contains("c.yaml: credentials.s.refreshTokenFile: only an oauth2 credential has a grant (token exchange); this one is type: static"))
    }
}
