import Config
import Foundation
import XCTest

/// `scopeHeader`/`allowedScopes` and `audienceHeader`/`allowedAudiences` beyond the basics in
/// `ConfigDecoderSTSTests`: each pair alone, the field names a route may not take, the
/// scope-token and audience rules, and the credential the headers choose from.
final class ConfigDecoderRequestedTokenTests: XCTestCase {
    private let credentials = "credentials:\n  sts:\n    type: oauth2\n    tokenUrl: https://sts.test/token\n    clientId: gw\n    secret: s\n"

    private func route(_ body: String, credential: String? = "    credential: sts\n") -> String {
        credentials + "routes:\n  - host: api.test\n" + (credential ?? "") + body
    }

    private func assertProblem(_ yaml: String, _ path: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        let lines = problemLines(yaml, file: file, line: line)
        XCTAssertTrue(lines.contains { $0.contains(path) && $0.contains(message) }, "\(yaml)\n→ \(lines)", file: file, line: line)
    }

    func testAnAudienceAloneAndExactlySixtyFourScopes() throws {
        let audience = try XCTUnwrap(parseOK(route("    audienceHeader: Token-Sidecar-Audience\n    allowedAudiences: [\"//iam.test/p\"]\n")))
        XCTAssertEqual(audience.routes.first?.requested,
                       RequestedTokenSettings(audienceHeader: "Token-Sidecar-Audience", allowedAudiences: ["//iam.test/p"]))
        let scopes = (1...64).map { "s\($0)" }
        let many = try XCTUnwrap(parseOK(route("    scopeHeader: S\n    allowedScopes: [\(scopes.joined(separator: ", "))]\n")))
        XCTAssertEqual(many.routes.first?.requested?.allowedScopes, scopes)
        XCTAssertNil(many.routes.first?.requested?.audienceHeader)
        XCTAssertEqual(try XCTUnwrap(parseOK(route("    scopeHeader: S\n    allowedScopes: [\"a!#[]^~\", \"urn:x:read\"]\n")))
            .routes.first?.requested?.allowedScopes, ["a!#[]^~", "urn:x:read"], "every scope-token character but \" and \\")
    }

    func testEachHeaderNeedsItsListAndEachListItsHeader() {
        assertProblem(route("    audienceHeader: A\n"), "routes[0].allowedAudiences", "required with audienceHeader")
        assertProblem(route("    allowedAudiences: [a]\n"), "routes[0].audienceHeader", "required with allowedAudiences")
        assertProblem(route("    audienceHeader: A\n    allowedAudiences: []\n"), "routes[0].allowedAudiences", "is empty")
        assertProblem(route("    scopeHeader: S\n    allowedScopes: read\n"), "routes[0].allowedScopes", "expected a list")
    }

    func testFieldsTheProxyHandlesAndInvalidNamesAreRefused() {
        for name in ["Authorization", "proxy-authorization", "HOST", "Connection", "Content-Length", "Transfer-Encoding",
                     "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade", "Proxy-Authenticate"] {
            assertProblem(route("    scopeHeader: \(name)\n    allowedScopes: [read]\n"), "routes[0].scopeHeader", "handles itself")
            assertProblem(route("    audienceHeader: \(name)\n    allowedAudiences: [a]\n"), "routes[0].audienceHeader", "handles itself")
        }
        for name in ["\"Scope:\"", "\"Sc\u{f6}pe\"", "\"(scope)\"", "\"a/b\"", "\"\""] {
            assertProblem(route("    scopeHeader: \(name)\n    allowedScopes: [read]\n"), "routes[0].scopeHeader", "not an HTTP field name")
        }
    }

    func testScopesAreScopeTokensAndAudiencesVisibleTextEachOnce() {
        for scope in ["'say \"hi\"'", "'a\\b'", "\"\"", "\"r\u{e9}ad\"", "\"a\\tb\""] {
            assertProblem(route("    scopeHeader: S\n    allowedScopes: [\(scope)]\n"), "routes[0].allowedScopes[0]", "not a valid scope")
        }
        for audience in ["\"\"", "\"a\\tb\"", "\"a b\""] {
            assertProblem(route("    audienceHeader: A\n    allowedAudiences: [\(audience)]\n"), "routes[0].allowedAudiences[0]", "not a valid audience")
        }
        assertProblem(route("    audienceHeader: A\n    allowedAudiences: [a, b, a]\n"), "routes[0].allowedAudiences[2]", "listed twice")
    }

    func testTheHeadersChooseAmongTheTokensOfAnOAuth2Credential() {
        let body = "    scopeHeader: S\n    allowedScopes: [read]\n"
        assertProblem(route(body, credential: nil), "routes[0].credential", "required with scopeHeader")
        assertProblem(route(body, credential: "    credential: null\n"), "routes[0].credential", "required with scopeHeader")
        assertProblem(route("    audienceHeader: A\n    allowedAudiences: [a]\n", credential: nil), "routes[0].credential", "required with audienceHeader")
        let fixed = "credentials:\n  fixed: {type: static, token: t}\nroutes:\n  - host: api.test\n    credential: fixed\n" + body
        assertProblem(fixed, "routes[0].credential", "need an oauth2 credential")
        assertProblem(route("    scopeHeadr: S\n    allowedScopes: [read]\n"), "routes[0].scopeHeadr", "did you mean 'scopeHeader'")
    }
}
