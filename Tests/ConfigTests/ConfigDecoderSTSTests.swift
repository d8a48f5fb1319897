import Config
import Foundation
import XCTest

/// Token exchange and per-request tokens in the configuration: `grant: token_exchange`,
/// `auth: none`, `clientAuthorization: exchange` with `exchange:`, and `scopeHeader` /
/// `audienceHeader` with their allowed lists — decoded, refused with the key named, rendered.
final class ConfigDecoderSTSTests: XCTestCase {
    private let sts = "  sts:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    clientId: gw\n    secret: s\n"

    private func config(credentials: String? = nil, route: String) -> String {
        "credentials:\n\(credentials ?? sts)routes:\n  - host: api.test\n    credential: sts\n" + route
    }

    func testAnExchangeRouteWithEverySettingAndWithDefaults() throws {
        let full = try XCTUnwrap(parseOK(config(route: """
                clientAuthorization: exchange
                exchange:
                  audience: orders
                  scope: "orders.read orders.write"
                  resource: https://orders.test
                  requestedTokenType: urn:ietf:params:oauth:token-type:jwt
                  subjectTokenType: urn:ietf:params:oauth:token-type:id_token
                  actorTokenFile: /var/run/secrets/tokens/sa
                  actorTokenType: urn:ietf:params:oauth:token-type:access_token
            """)))
        XCTAssertEqual(full.routes.first?.clientAuthorization, .exchange)
        XCTAssertEqual(full.routes.first?.exchange, STSSettings(
            audience: "orders", scope: "orders.read orders.write", resource: "https://orders.test",
            requestedTokenType: "urn:ietf:params:oauth:token-type:jwt", subjectTokenType: "urn:ietf:params:oauth:token-type:id_token",
            actorTokenFile: "/var/run/secrets/tokens/sa", actorTokenType: "urn:ietf:params:oauth:token-type:access_token"))
        let plain = try XCTUnwrap(parseOK(config(route: "    clientAuthorization: exchange\n")))
        XCTAssertEqual(plain.routes.first?.exchange, STSSettings(), "every key optional, type URNs defaulted")
        XCTAssertEqual(plain.routes.first?.exchange?.subjectTokenType, "urn:ietf:params:oauth:token-type:access_token")
    }

    func testExchangeMistakesNameTheirKey() {
        let outside = problemLines(config(route: "    exchange: {audience: orders}\n"))
        XCTAssertTrue(outside.contains { $0.contains("routes[0].exchange") && $0.contains("only used with clientAuthorization: exchange") }, "\(outside)")
        let unknown = problemLines(config(route: "    clientAuthorization: exchange\n    exchange: {audiance: orders}\n"))
        XCTAssertTrue(unknown.contains { $0.contains("audiance") && $0.contains("audience") }, "\(unknown)")
        let badType = problemLines(config(route: "    clientAuthorization: exchange\n    exchange: {subjectTokenType: jwt}\n"))
        XCTAssertTrue(badType.contains { $0.contains("routes[0].exchange.subjectTokenType") && $0.contains("token type URI") }, "\(badType)")
        let badResource = problemLines(config(route: "    clientAuthorization: exchange\n    exchange: {resource: orders}\n"))
        XCTAssertTrue(badResource.contains { $0.contains("routes[0].exchange.resource") }, "\(badResource)")
        let lonelyType = problemLines(config(route: "    clientAuthorization: exchange\n    exchange: {actorTokenType: urn:x:y}\n"))
        XCTAssertTrue(lonelyType.contains { $0.contains("actorTokenType") && $0.contains("only used with actorTokenFile") }, "\(lonelyType)")
        let staticCredential = problemLines("credentials:\n  sts: {type: static, token: t}\nroutes:\n  - host: api.test\n    credential: sts\n    clientAuthorization: exchange\n")
        XCTAssertTrue(staticCredential.contains { $0.contains("routes[0].clientAuthorization") && $0.contains("oauth2") }, "\(staticCredential)")
        let noCredential = problemLines("routes:\n  - host: api.test\n    clientAuthorization: exchange\n")
        XCTAssertTrue(noCredential.contains { $0.contains("routes[0].clientAuthorization") }, "\(noCredential)")
    }

    func testTheFileSubjectGrantAndAPublicClient() throws {
        let parsed = try XCTUnwrap(parseOK("""
            credentials:
              cloud:
                type: oauth2
                grant: token_exchange
                tokenUrl: https://sts.test/token
                subjectTokenFile: /var/run/secrets/tokens/sa
                audience: //iam.test/pool
                auth: none
            """))
        guard case .oauth2(let oauth) = parsed.credentials.first?.kind else { return XCTFail("not oauth2") }
        XCTAssertEqual(oauth.grant, .sts(subjectTokenFile: "/var/run/secrets/tokens/sa",
                                                   subjectTokenType: "urn:ietf:params:oauth:token-type:jwt"))
        XCTAssertEqual(oauth.auth, .none)
        XCTAssertEqual(oauth.clientId, "", "a public client need not name itself")
        XCTAssertNil(oauth.secret)
    }

    func testGrantMistakesNameTheirKey() {
        let base = "credentials:\n  c:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    clientId: gw\n"
        let typo = problemLines(base + "    secret: s\n    grant: token_exchang\n    subjectTokenFile: /f\n")
        XCTAssertTrue(typo.contains { $0.contains("credentials.c.grant") && $0.contains("did you mean 'token_exchange'") }, "\(typo)")
        let missing = problemLines(base + "    secret: s\n    grant: token_exchange\n")
        XCTAssertTrue(missing.contains { $0.contains("credentials.c.subjectTokenFile") && $0.contains("required") }, "\(missing)")
        let stray = problemLines(base + "    secret: s\n    subjectTokenFile: /f\n")
        XCTAssertTrue(stray.contains { $0.contains("credentials.c.subjectTokenFile") && $0.contains("only used with grant: token_exchange") }, "\(stray)")
        let publicClientCredentials = problemLines(base + "    auth: none\n")
        XCTAssertTrue(publicClientCredentials.contains { $0.contains("credentials.c.auth") && $0.contains("only for token exchange") },
                      "\(publicClientCredentials)")
        let secretWithNone = problemLines(base + "    auth: none\n    secret: s\n    grant: token_exchange\n    subjectTokenFile: /f\n")
        XCTAssertTrue(secretWithNone.contains { $0.contains("credentials.c.secret") }, "\(secretWithNone)")
        let noClientId = problemLines("credentials:\n  c:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    secret: s\n")
        XCTAssertTrue(noClientId.contains { $0.contains("credentials.c.clientId") }, "clientId stays required with client authentication")
    }

    func testAPublicClientServesExchangeRoutes() throws {
        let credentials = "  sts:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    auth: none\n"
        XCTAssertNotNil(parseOK(config(credentials: credentials, route: "    clientAuthorization: exchange\n")))
        let mixed = problemLines(config(credentials: credentials, route: "    clientAuthorization: exchange\n")
                                 + "  - host: other.test\n    credential: sts\n")
        XCTAssertTrue(mixed.contains { $0.contains("credentials.sts.auth") }, "a route injecting its own token needs client authentication: \(mixed)")
        let refusedRoute = problemLines(config(credentials: credentials, route: "    clientAuthorization: exchange\n    exchange: {audiance: o}\n"))
        XCTAssertFalse(refusedRoute.contains { $0.contains("credentials.sts.auth") }, "the refused route is the problem: \(refusedRoute)")
    }

    func testPerRequestScopesNeedAClientCredentialsGrant() {
        let yaml = "credentials:\n  cloud: {type: oauth2, grant: token_exchange, tokenUrl: \"https://sts.test/token\", subjectTokenFile: /f, auth: none}\n"
            + "routes:\n  - host: api.test\n    credential: cloud\n    scopeHeader: S\n    allowedScopes: [read]\n"
        let lines = problemLines(yaml)
        XCTAssertTrue(lines.contains { $0.contains("routes[0].credential") && $0.contains("grant: token_exchange") }, "\(lines)")
    }

    func testPerRequestScopesAndAudiences() throws {
        let parsed = try XCTUnwrap(parseOK(config(route: """
                scopeHeader: Token-Sidecar-Scope
                allowedScopes: [read, write, "orders:admin"]
                audienceHeader: X-Audience
                allowedAudiences: ["https://a.test", "https://b.test"]
            """)))
        XCTAssertEqual(parsed.routes.first?.requested, RequestedTokenSettings(
            scopeHeader: "Token-Sidecar-Scope", allowedScopes: ["read", "write", "orders:admin"],
            audienceHeader: "X-Audience", allowedAudiences: ["https://a.test", "https://b.test"]))
        XCTAssertNil(try XCTUnwrap(parseOK(config(route: ""))).routes.first?.requested, "nothing per request unless asked")
    }

    func testPerRequestMistakesNameTheirKey() {
        let cases: [(String, String, String)] = [
            ("    scopeHeader: Token-Sidecar-Scope\n", "routes[0].allowedScopes", "required with scopeHeader"),
            ("    allowedScopes: [read]\n", "routes[0].scopeHeader", "required with allowedScopes"),
            ("    scopeHeader: Authorization\n    allowedScopes: [read]\n", "routes[0].scopeHeader", "handles itself"),
            ("    scopeHeader: \"Bad Name\"\n    allowedScopes: [read]\n", "routes[0].scopeHeader", "not an HTTP field name"),
            ("    scopeHeader: S\n    allowedScopes: [\"read write\"]\n", "routes[0].allowedScopes[0]", "not a valid scope"),
            ("    scopeHeader: S\n    allowedScopes: [read, read]\n", "routes[0].allowedScopes[1]", "listed twice"),
            ("    scopeHeader: S\n    allowedScopes: []\n", "routes[0].allowedScopes", "is empty"),
            ("    scopeHeader: S\n    allowedScopes: [\(( 1...65).map { "s\($0)" }.joined(separator: ", "))]\n", "routes[0].allowedScopes", "at most 64"),
            ("    audienceHeader: A\n    allowedAudiences: [\"a b\"]\n", "routes[0].allowedAudiences[0]", "not a valid audience"),
            ("    scopeHeader: S\n    allowedScopes: [read]\n    audienceHeader: s\n    allowedAudiences: [a]\n", "routes[0].audienceHeader", "same field"),
            ("    clientAuthorization: keep\n    scopeHeader: S\n    allowedScopes: [read]\n", "routes[0].clientAuthorization", "does not combine"),
        ]
        for (route, path, message) in cases {
            let lines = problemLines(config(route: route))
            XCTAssertTrue(lines.contains { $0.contains(path) && $0.contains(message) }, "\(route): \(lines)")
        }
        let staticCredential = problemLines("credentials:\n  sts: {type: static, token: t}\nroutes:\n  - host: api.test\n    credential: sts\n    scopeHeader: S\n    allowedScopes: [read]\n")
        XCTAssertTrue(staticCredential.contains { $0.contains("oauth2") }, "\(staticCredential)")
    }

    func testCheckRendersWhatItLoadedAndTheRenderingLoadsBack() throws {
        let yaml = """
            credentials:
              cloud:
                type: oauth2
                grant: token_exchange
                tokenUrl: https://sts.test/token
                subjectTokenFile: /var/run/secrets/tokens/sa
                auth: none
            \(sts)routes:
              - host: api.test
                credential: sts
                clientAuthorization: exchange
                exchange: {audience: orders, actorTokenFile: /var/run/secrets/tokens/sa}
              - host: reports.test
                credential: sts
                scopeHeader: Token-Sidecar-Scope
                allowedScopes: [read, write]
            """
        let parsed = try XCTUnwrap(parseOK(yaml))
        let rendered = parsed.renderEffective()
        for line in ["grant: token_exchange", "subjectTokenFile: \"/var/run/secrets/tokens/sa\"", "clientAuthorization: exchange",
                     "audience: \"orders\"", "actorTokenFile:", "scopeHeader: \"Token-Sidecar-Scope\"", "allowedScopes: [\"read\", \"write\"]",
                     "clientId: null"] {
            XCTAssertTrue(rendered.contains(line), "\(line) in:\n\(rendered)")
        }
        let again = try XCTUnwrap(parseOK(rendered))
        XCTAssertEqual(again.routes, parsed.routes)
        XCTAssertEqual(again.credentials.first, parsed.credentials.first, "the public client, whole (no secret to mask)")
    }

    func testMoreGrantAndExchangeMistakesNameTheirKey() {
        let base = "credentials:\n  c:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    clientId: gw\n"
        let exchangeGrant = "    grant: token_exchange\n    subjectTokenFile: /f\n"
        let cases: [(String, String, String)] = [
            (base + "    secret: s\n    grant: client_credentials\n    subjectTokenType: urn:x:y\n", "credentials.c.subjectTokenType", "only used with grant: token_exchange"),
            (base + "    secret: s\n" + exchangeGrant + "    subjectTokenType: jwt\n", "credentials.c.subjectTokenType", "token type URI"),
            (base + "    secret: s\n    grant: token_exchange\n    subjectTokenFile: \"\"\n", "credentials.c.subjectTokenFile", "is empty"),
            (base + "    auth: none\n    secretFile: /s\n" + exchangeGrant, "credentials.c.secretFile", "uses no client secret"),
            (base + "    auth: none\n    secretEnv: S\n" + exchangeGrant, "credentials.c.secretEnv", "uses no client secret"),
            ("credentials:\n  c: {type: static, token: t, grant: token_exchange}\n", "credentials.c.grant", "only an oauth2 credential"),
            ("credentials:\n  c: {type: static, token: t, subjectTokenFile: /f}\n", "credentials.c.subjectTokenFile", "only an oauth2 credential"),
            ("credentials:\n  c: {type: mca, serverUrl: \"https://m.test/a\", tenantId: t, clientId: i, secret: s, grant: token_exchange}\n",
             "credentials.c.grant", "only an oauth2 credential"),
            (config(route: "    clientAuthorization: exchange\n    exchange: orders\n"), "routes[0].exchange", "expected a mapping"),
            (config(route: "    clientAuthorization: exchange\n    exchange: {requestedTokenType: jwt}\n"), "routes[0].exchange.requestedTokenType", "token type URI"),
            (config(route: "    clientAuthorization: exchange\n    exchange: {actorTokenType: jwt, actorTokenFile: /a}\n"), "routes[0].exchange.actorTokenType", "token type URI"),
            (config(route: "    clientAuthorization: exchange\n    exchange: {actorTokenFile: \"\"}\n"), "routes[0].exchange.actorTokenFile", "is empty"),
            (config(route: "    clientAuthorization: exchange\n    exchange: {audience: \"\"}\n"), "routes[0].exchange.audience", "is empty"),
            (config(route: "    clientAuthorization: exchange\n    exchange: {resource: \"https://o.test/#f\"}\n"), "routes[0].exchange.resource", "without a fragment"),
            ("routes:\n  - host: api.test\n    credential: null\n    clientAuthorization: exchange\n", "routes[0].clientAuthorization", "credential"),
        ]
        for (yaml, path, message) in cases {
            let lines = problemLines(yaml)
            XCTAssertTrue(lines.contains { $0.contains(path) && $0.contains(message) }, "\(yaml)\n→ \(lines)")
        }
        let fileSubject = problemLines("""
            credentials:
              cloud: {type: oauth2, grant: token_exchange, tokenUrl: "https://sts.test/token", subjectTokenFile: /f, auth: none}
            routes:
              - {host: api.test, credential: cloud, clientAuthorization: exchange}
            """)
        XCTAssertTrue(fileSubject.contains { $0.contains("routes[0].clientAuthorization") && $0.contains("grant: client_credentials") },
                      "a route's subject is the caller's token, not a file: \(fileSubject)")
        let unused = problemLines("credentials:\n  c: {type: oauth2, tokenUrl: \"https://sts.test/token\", auth: none}\n")
        XCTAssertTrue(unused.contains { $0.contains("credentials.c.auth") && $0.contains("only for token exchange") }, "\(unused)")
    }

    func testAPublicClientKeepsAGivenClientIdAndAnExplicitDefaultGrant() throws {
        let parsed = try XCTUnwrap(parseOK("""
            credentials:
              cloud: {type: oauth2, grant: token_exchange, tokenUrl: "https://sts.test/token", subjectTokenFile: /f, subjectTokenType: "urn:x:id", auth: none, clientId: pool}
              sts: {type: oauth2, grant: client_credentials, tokenUrl: "https://sts.test/token", clientId: gw, secret: s}
            """))
        guard case .oauth2(let cloud) = parsed.credentials.first?.kind, case .oauth2(let sts) = parsed.credentials.last?.kind else {
            return XCTFail("not oauth2")
        }
        XCTAssertEqual(cloud.clientId, "pool")
        XCTAssertEqual(cloud.grant, .sts(subjectTokenFile: "/f", subjectTokenType: "urn:x:id"))
        XCTAssertEqual(sts.grant, .clientCredentials)
    }

    func testSubjectAndActorFilesResolveAgainstTheConfigDirectoryAndNeedNotExistYet() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("sidecar.yaml").path
        try """
            credentials:
              cloud: {type: oauth2, grant: token_exchange, tokenUrl: "https://sts.test/token", subjectTokenFile: tokens/sa, auth: none}
              sts: {type: oauth2, tokenUrl: "https://sts.test/token", clientId: gw, secret: s}
            routes:
              - host: api.test
                credential: sts
                clientAuthorization: exchange
                exchange: {actorTokenFile: ../actor}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try ConfigLoader.load(path: path, environment: [:])
        guard case .oauth2(let cloud) = config.credentials.first?.kind else { return XCTFail("not oauth2") }
        XCTAssertEqual(cloud.grant, .sts(subjectTokenFile: directory.appendingPathComponent("tokens/sa").standardizedFileURL.path,
                                                   subjectTokenType: STSSettings.jwtTokenType))
        XCTAssertEqual(config.routes.first?.exchange?.actorTokenFile,
                       directory.deletingLastPathComponent().appendingPathComponent("actor").standardizedFileURL.path)
    }

    func testCheckShowsDefaultsAndPathsButNeverTheTokensInTheFiles() throws {
        let directory = try makeTemporaryDirectory(self)
        let subject = directory.appendingPathComponent("subject").path
        try "SUBJECT-SENTINEL-42".write(toFile: subject, atomically: true, encoding: .utf8)
        let parsed = try XCTUnwrap(parseOK("""
            credentials:
              cloud: {type: oauth2, grant: token_exchange, tokenUrl: "https://sts.test/token", subjectTokenFile: "\(subject)", auth: none}
            \(sts)routes:
              - {host: api.test, credential: sts, clientAuthorization: exchange, exchange: {actorTokenFile: "\(subject)"}}
              - {host: aud.test, credential: sts, audienceHeader: X-Aud, allowedAudiences: ["https://a.test"]}
            """))
        let rendered = parsed.renderEffective()
        for line in ["subjectTokenType: \"urn:ietf:params:oauth:token-type:jwt\"", "grant: client_credentials",
                     "subjectTokenType: \"urn:ietf:params:oauth:token-type:access_token\"", "actorTokenFile: \"\(subject)\"",
                     "actorTokenType: \"urn:ietf:params:oauth:token-type:jwt\"", "audience: null", "resource: null",
                     "audienceHeader: \"X-Aud\"", "allowedAudiences: [\"https://a.test\"]", "auth: none"] {
            XCTAssertTrue(rendered.contains(line), "\(line) in:\n\(rendered)")
        }
        XCTAssertFalse(rendered.contains("SENTINEL"), "file paths only, never their contents:\n\(rendered)")
        XCTAssertFalse(rendered.contains("scopeHeader"), "only the configured header:\n\(rendered)")
        XCTAssertEqual(try XCTUnwrap(parseOK(rendered)).routes, parsed.routes)
    }

    func testTheExamplesLoad() throws {
        let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config")
        let exchange = try ConfigLoader.load(path: config.appendingPathComponent("token-exchange.yaml").path,
                                             environment: ["STS_CLIENT_SECRET": "s"])
        XCTAssertEqual(exchange.routes.first?.clientAuthorization, .exchange)
        XCTAssertEqual(exchange.routes.first?.exchange?.audience, "orders")
        guard case .oauth2(let cloud) = exchange.credentials.last?.kind else { return XCTFail("not oauth2") }
        XCTAssertEqual(cloud.auth, .none)
        XCTAssertEqual(cloud.grant.name, "token_exchange")
        let scopes = try ConfigLoader.load(path: config.appendingPathComponent("per-request-scope.yaml").path,
                                           environment: ["PARTNER_CLIENT_SECRET": "s"])
        XCTAssertEqual(scopes.routes.first?.requested?.allowedScopes, ["read", "write", "admin"])
        XCTAssertEqual(scopes.routes.first?.requested?.audienceHeader, "Token-Sidecar-Audience")
    }
}
