import EventLoop
import Foundation
import HTTP1
import Logging
import TokenManager
import XCTest
@testable import Proxy

/// How a route with per-request tokens reads a request: the caller's bearer token, the scope
/// and audience fields within the allowed lists, and what it answers when they are missing,
/// malformed or not allowed — without any socket or token server.
final class RouteTokensTests: XCTestCase {
    private var thread: LoopThread!

    override func setUpWithError() throws {
        thread = try LoopThread { _ in }
        try thread.start()
    }

    override func tearDown() { thread.stopAndJoin() }

    private func tokens(exchanges: Bool) -> RouteTokens {
        let loop = thread.loop
        let variants = TokenVariants(name: "sts", capacity: 10, loop: loop) { key, _, _ in
            let request = try! TokenEndpointRequest.oauth2(tokenURL: "http://127.0.0.1:1/token", clientId: "c", secret: "s")
            return ManagedCredential(name: "sts", source: .fixed(request), loop: loop, logger: Logger(label: "test"), variant: key.description)
        }
        return RouteTokens(variants: variants, exchanges: exchanges, scopeHeader: "Token-Sidecar-Scope", allowedScopes: ["read", "write"],
                           audienceHeader: "Token-Sidecar-Audience", allowedAudiences: ["https://a.test"])
    }

    private func parse(_ fields: String) throws -> RequestHead {
        let text = "GET /x HTTP/1.1\r\nHost: api.test\r\n\(fields)\r\n"
        return try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private func outcome(_ route: RouteTokens, _ fields: String, now: Double = 1_800_000_000) throws
        -> Result<(ManagedCredential, TokenVariantKey), ProxyError> {
        route.credential(for: try parse(fields), wallClock: now)
    }

    private func error(_ route: RouteTokens, _ fields: String) throws -> ProxyError? {
        if case .failure(let error) = try outcome(route, fields) { return error }
        return nil
    }

    /// An unsigned JWT with `exp` (the proxy reads the expiry, the STS checks the signature).
    private func jwt(exp: Int) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        return part("{\"alg\":\"HS256\"}") + "." + part("{\"sub\":\"alice\",\"exp\":\(exp)}") + ".c2ln"
    }

    func testTheCallersBearerTokenIsTheSubject() throws {
        let route = tokens(exchanges: true)
        guard case .success(let (credential, key)) = try outcome(route, "authorization: bearer  abc.def-_~+/==\r\n") else {
            return XCTFail("a bearer token (any case, extra spaces) is the subject")
        }
        XCTAssertEqual(key.subjectDigest, Digest.sha256Hex("abc.def-_~+/=="))
        guard case .success(let (again, _)) = try outcome(route, "Authorization: Bearer abc.def-_~+/==\r\n") else { return XCTFail() }
        XCTAssertTrue(credential === again, "one credential per caller")
    }

    func testAMissingOrMalformedSubjectIs401WithAChallenge() throws {
        let route = tokens(exchanges: true)
        let missing = try XCTUnwrap(try error(route, ""))
        XCTAssertEqual(missing.status, 401)
        XCTAssertEqual(missing.challenge, "Bearer")
        for fields in ["Authorization: Basic dXNlcjpw\r\n", "Authorization: Bearer\r\n", "Authorization: Bearer a b\r\n",
                       "Authorization: Bearer a=b\r\n", "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n"] {
            let refused = try XCTUnwrap(try error(route, fields), fields)
            XCTAssertEqual(refused.status, 401, fields)
            XCTAssertEqual(refused.challenge, "Bearer error=\"invalid_request\"", fields)
        }
    }

    func testAnExpiredSubjectIs401WithoutAskingTheTokenServer() throws {
        let route = tokens(exchanges: true)
        let expired = try XCTUnwrap(try error(route, "Authorization: Bearer \(jwt(exp: 1_700_000_000))\r\n"))
        XCTAssertEqual(expired.status, 401)
        XCTAssertTrue(expired.challenge?.contains("invalid_token") == true)
        XCTAssertNil(try error(route, "Authorization: Bearer \(jwt(exp: 1_900_000_000))\r\n"))
    }

    func testScopesWithinTheListChooseTheTokenAndOthersAre403() throws {
        let route = tokens(exchanges: false)
        guard case .success(let (first, key)) = try outcome(route, "Token-Sidecar-Scope: write\r\ntoken-sidecar-scope: read write\r\n"),
              case .success(let (second, _)) = try outcome(route, "Token-Sidecar-Scope: read write\r\n") else { return XCTFail() }
        XCTAssertEqual(key.scope, "read write", "lines combined, order and duplicates ignored")
        XCTAssertTrue(first === second)
        let refused = try XCTUnwrap(try error(route, "Token-Sidecar-Scope: read admin\r\n"))
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.details, ["refused_scope": "admin"])
        guard case .success(let (_, plain)) = try outcome(route, "") else { return XCTFail() }
        XCTAssertNil(plain.scope, "no field: the credential's own scope")
    }

    func testTheAudienceMustBeAllowedAndSingle() throws {
        let route = tokens(exchanges: false)
        XCTAssertNil(try error(route, "Token-Sidecar-Audience: https://a.test\r\n"))
        XCTAssertEqual(try error(route, "Token-Sidecar-Audience: https://evil.test\r\n")?.status, 403)
        XCTAssertEqual(try error(route, "Token-Sidecar-Audience: https://a.test\r\nToken-Sidecar-Audience: https://b.test\r\n")?.status, 400)
    }

    func testTheRoutesFieldsAreConsumed() {
        let route = tokens(exchanges: false)
        XCTAssertTrue(route.consumes(HTTPField(name: "TOKEN-SIDECAR-SCOPE", value: "read")))
        XCTAssertTrue(route.consumes(HTTPField(name: "token-sidecar-audience", value: "x")))
        XCTAssertFalse(route.consumes(HTTPField(name: "Token-Sidecar-Other", value: "x")))
    }

    func testAnErrorResponseCarriesTheChallengeAndDetails() {
        let error = ProxyError(status: 401, type: "http_request_denied", message: "m", challenge: "Bearer", details: ["token_error": "invalid_grant"])
        let text = String(decoding: ErrorResponse.bytes(for: error, close: false), as: UTF8.self)
        XCTAssertTrue(text.contains("\r\nWWW-Authenticate: Bearer\r\n"), text)
        XCTAssertTrue(text.contains("\"token_error\": \"invalid_grant\""), text)
        XCTAssertTrue(text.contains("Proxy-Status: token-sidecar; error=http_request_denied"), text)
    }
}
