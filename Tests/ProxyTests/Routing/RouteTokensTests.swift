import Crypto
import EventLoop
import Foundation
import HTTP1
import Logging
@testable import Proxy
import TokenManager
import XCTest

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
        part("{\"alg\":\"HS256\"}") + "." + part("{\"sub\":\"alice\",\"exp\":\(exp)}") + ".c2ln"
    }

    private func part(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
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
        XCTAssertTrue(consumes(route, "TOKEN-SIDECAR-SCOPE"))
        XCTAssertTrue(consumes(route, "token-sidecar-audience"))
        XCTAssertFalse(consumes(route, "Token-Sidecar-Other"))
    }

    func testAnUnsignedExpiredSubjectIs401InvalidToken() throws {
        let route = tokens(exchanges: true)
        let now = 1_800_000_000
        let unsigned = { (exp: Int) in self.part("{\"alg\":\"none\"}") + "." + self.part("{\"exp\":\(exp)}") + ".sig" }
        for exp in [now - 3600, now] {
            let expired = try XCTUnwrap(try error(route, "Authorization: Bearer \(unsigned(exp))\r\n"), "exp \(exp)")
            XCTAssertEqual(expired.status, 401)
            XCTAssertEqual(expired.type, "http_request_denied")
            XCTAssertEqual(expired.challenge?.hasPrefix("Bearer error=\"invalid_token\""), true, expired.challenge ?? "no challenge")
        }
        XCTAssertNil(try error(route, "Authorization: Bearer \(unsigned(now + 60))\r\n"), "not expired yet")
        XCTAssertNil(try error(route, "Authorization: Bearer opaque-token\r\n"), "an opaque token is for the token server to judge")
    }

    func testTheSchemeIsCaseInsensitiveButMustBeBearerFollowedByASpace() throws {
        let route = tokens(exchanges: true)
        for fields in ["Authorization: BEARER tok\r\n", "authorization: bearer  tok\r\n", "AUTHORIZATION: Bearer tok\r\n"] {
            guard case .success(let (_, key)) = try outcome(route, fields) else { return XCTFail(fields) }
            XCTAssertEqual(key.subjectDigest, Digest.sha256Hex("tok"), fields)
        }
        for fields in ["Authorization: Bearertok\r\n", "Authorization: Basic x\r\n", "Authorization: Token tok\r\n",
                       "Authorization: Bearer tok@en\r\n", "Authorization: Bearer a==b\r\n", "Authorization: Bearer a,b\r\n",
                       "Authorization: Bearer a\r\nauthorization: Bearer a\r\n"] {
            let refused = try XCTUnwrap(try error(route, fields), fields)
            XCTAssertEqual(refused.status, 401, fields)
            XCTAssertEqual(refused.challenge, "Bearer error=\"invalid_request\"", fields)
        }
    }

    /// RFC 6750 §2.1: a b64token has at least one character before its `=` padding.
    func testABearerTokenOfPaddingAloneIsRefused() throws {
        let route = tokens(exchanges: true)
        for fields in ["Authorization: Bearer =\r\n", "Authorization: Bearer ==\r\n"] {
            let refused = try error(route, fields)
            XCTAssertEqual(refused?.status, 401, "\(fields) is no token: nothing to exchange")
            XCTAssertEqual(refused?.challenge, "Bearer error=\"invalid_request\"", fields)
        }
        XCTAssertEqual(route.variants.count, 0, "no variant for a token that cannot be one")
    }

    func testARouteThatDoesNotExchangeIgnoresTheCallersAuthorization() throws {
        let route = tokens(exchanges: false)
        guard case .success(let (_, key)) = try outcome(route, "Authorization: Basic dXNlcjpw\r\n") else {
            return XCTFail("the caller's Authorization is not this route's business")
        }
        XCTAssertNil(key.subjectDigest)
    }

    func testEachCallerAndScopeSetHasItsOwnToken() throws {
        let route = tokens(exchanges: true)
        func credential(_ subject: String, _ scope: String) throws -> ManagedCredential? {
            guard case .success(let (credential, _)) = try outcome(route, "Authorization: Bearer \(subject)\r\nToken-Sidecar-Scope: \(scope)\r\n")
            else { return nil }
            return credential
        }
        let aliceRead = try XCTUnwrap(try credential("alice", "read"))
        XCTAssertTrue(try credential("alice", "read read") === aliceRead)
        XCTAssertFalse(try credential("bob", "read") === aliceRead, "never another caller's token")
        XCTAssertFalse(try credential("alice", "read write") === aliceRead)
        let tabbed = try credential("alice", "write\tread")
        XCTAssertNotNil(tabbed)
        XCTAssertTrue(tabbed === (try credential("alice", "read write")), "tabs separate scopes too")
        XCTAssertEqual(route.variants.count, 3)
    }

    func testARefusedAudienceOrScopeIsNamedAndKeptShortAndPrintable() throws {
        let route = tokens(exchanges: false)
        let audience = try XCTUnwrap(try error(route, "Token-Sidecar-Audience: https://evil.test\r\n"))
        XCTAssertEqual(audience.status, 403)
        XCTAssertEqual(audience.details, ["refused_audience": "https://evil.test"])
        XCTAssertNil(audience.challenge)
        let long = String(repeating: "x", count: 300)
        let scope = try XCTUnwrap(try error(route, "Token-Sidecar-Scope: read \(long)\r\n"))
        XCTAssertEqual(scope.status, 403)
        XCTAssertEqual(scope.details["refused_scope"], String(repeating: "x", count: 128), "echoed back, at most 128 characters")
        let twoAudiences = try XCTUnwrap(try error(route, "Token-Sidecar-Audience: https://a.test\r\nToken-Sidecar-Audience: https://evil.test\r\n"))
        XCTAssertEqual(twoAudiences.status, 400)
        XCTAssertEqual(twoAudiences.type, "http_request_error")
        guard case .success(let (_, same)) = try outcome(route, "Token-Sidecar-Audience: https://a.test\r\ntoken-sidecar-audience: https://a.test\r\n"),
              case .success(let (_, empty)) = try outcome(route, "Token-Sidecar-Audience: \r\n") else {
            return XCTFail("the same audience twice, or none, is fine")
        }
        XCTAssertEqual(same.audience, "https://a.test")
        XCTAssertNil(empty.audience)
    }

    func testARouteWithoutFieldsConsumesNothing() {
        let variants = tokens(exchanges: true).variants
        let route = RouteTokens(variants: variants, exchanges: true, scopeHeader: nil, allowedScopes: [],
                                audienceHeader: nil, allowedAudiences: [])
        XCTAssertFalse(consumes(route, "Token-Sidecar-Scope"))
        XCTAssertFalse(consumes(route, "Authorization"))
        XCTAssertFalse(consumes(tokens(exchanges: true), "Authorization"),
                       "the caller's own field is not one of the route's")
    }

    func testARefusalsBodyIsJSONWhateverTheAppSent() throws {
        let route = tokens(exchanges: false)
        let refused = try XCTUnwrap(try error(route, "Token-Sidecar-Scope: a\"b\\c\r\n"))
        let bytes = ErrorResponse.bytes(for: refused, close: true)
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 403 "), text)
        XCTAssertFalse(text.contains("WWW-Authenticate"), "only a 401 challenges")
        XCTAssertTrue(text.contains("\r\nConnection: close\r\n"), text)
        let parts = text.components(separatedBy: "\r\n\r\n")
        XCTAssertEqual(parts.count, 2, text)
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: String], parts[1])
        XCTAssertEqual(body["error"], "http_request_denied")
        XCTAssertEqual(body["refused_scope"], "a\"b\\c")
        XCTAssertEqual(body.keys.sorted(), ["error", "message", "refused_scope"])

        let challenge = ProxyError(status: 401, type: "http_request_denied", message: "m", challenge: "Bearer error=\"invalid_token\"",
                                   details: ["b": "2", "a": "1"])
        let challenged = String(decoding: ErrorResponse.bytes(for: challenge, close: false), as: UTF8.self)
        XCTAssertTrue(challenged.contains("\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\n"), challenged)
        XCTAssertTrue(challenged.hasSuffix("{\"error\": \"http_request_denied\", \"message\": \"m\", \"a\": \"1\", \"b\": \"2\"}\n"), challenged)
    }

    func testAnErrorResponseCarriesTheChallengeAndDetails() {
        let error = ProxyError(status: 401, type: "http_request_denied", message: "m", challenge: "Bearer", details: ["token_error": "invalid_grant"])
        let text = String(decoding: ErrorResponse.bytes(for: error, close: false), as: UTF8.self)
        XCTAssertTrue(text.contains("\r\nWWW-Authenticate: Bearer\r\n"), text)
        XCTAssertTrue(text.contains("\"token_error\": \"invalid_grant\""), text)
        XCTAssertTrue(text.contains("Proxy-Status: token-sidecar; error=http_request_denied"), text)
    }
}

/// Whether `route` keeps a field line named `name` from the upstream.
private func consumes(_ route: RouteTokens, _ name: String) -> Bool {
    let head = RequestHead(method: "GET", target: .origin("/"), version: .http1_1,
                           fields: HTTPFields([HTTPField(name: name, value: "x")]), framing: .none,
                           host: Authority(host: "a.test", port: nil), keepAlive: true, expectsContinue: false)
    return head.withFieldSection { route.consumes($0.lines[0], in: $0) }
}
