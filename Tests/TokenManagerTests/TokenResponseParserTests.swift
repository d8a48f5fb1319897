import HTTP1
import TokenManager
import XCTest

final class TokenResponseParserTests: XCTestCase {
    private let now = 1_900_000_000.0

    private func parse(_ body: String, status: Int = 200, fields: [(String, String)] = [],
                       defaultLifetime: Duration = .seconds(3600), wallClock: Double? = nil) -> Result<TokenGrant, TokenFetchError> {
        let response = TokenHTTPResponse(status: status, fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }),
                                         body: Array(body.utf8))
        return TokenResponseParser.parse(response, defaultLifetime: defaultLifetime, wallClock: wallClock ?? now)
    }

    private func grant(_ result: Result<TokenGrant, TokenFetchError>, file: StaticString = #filePath, line: UInt = #line) -> TokenGrant? {
        guard case .success(let grant) = result else { XCTFail("expected a grant, got \(result)", file: file, line: line); return nil }
        return grant
    }

    private func failure(_ result: Result<TokenGrant, TokenFetchError>, file: StaticString = #filePath, line: UInt = #line) -> TokenFetchError? {
        guard case .failure(let error) = result else { XCTFail("expected an error", file: file, line: line); return nil }
        return error
    }

    func testExpiresInNumberAndNumericString() {
        let number = grant(parse(#"{"access_token":"abc","token_type":"Bearer","expires_in":3600}"#))
        XCTAssertEqual(number?.value, "abc")
        XCTAssertEqual(number?.lifetime, .seconds(3600))
        XCTAssertEqual(number?.lifetimeSource, .expiresIn)
        let string = grant(parse(#"{"access_token":"abc","token_type":"bearer","expires_in":"120"}"#))
        XCTAssertEqual(string?.lifetime, .seconds(120))
        let fraction = grant(parse(#"{"access_token":"abc","expires_in":4.5}"#))
        XCTAssertEqual(fraction?.lifetime, .milliseconds(4500))
    }

    func testAbsentExpiresInUsesJWTExpThenDefault() {
        // payload {"sub": "x", "exp": 2000000000}
        let jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiAieCIsICJleHAiOiAyMDAwMDAwMDAwfQ.c2ln"
        let fromJWT = grant(parse(#"{"access_token":"\#(jwt)","token_type":"Bearer"}"#, wallClock: 2_000_000_000 - 3600))
        XCTAssertEqual(fromJWT?.lifetime, .seconds(3600))
        // Absurd lifetimes are clamped.
        XCTAssertEqual(grant(parse(#"{"access_token":"\#(jwt)"}"#, wallClock: 0))?.lifetime, TokenResponseParser.maxLifetime)
        XCTAssertEqual(fromJWT?.lifetimeSource, .jwtExpiry)
        let opaque = grant(parse(#"{"access_token":"opaque.token"}"#, defaultLifetime: .seconds(900)))
        XCTAssertEqual(opaque?.lifetime, .seconds(900))
        XCTAssertEqual(opaque?.lifetimeSource, .defaultLifetime)
        XCTAssertEqual(grant(parse(#"{"access_token":"a.b.c","expires_in":null}"#))?.lifetimeSource, .defaultLifetime)
    }

    func testExpiredJWTIsRejected() {
        // payload {"exp": 1000}
        let jwt = "e30.eyJleHAiOjEwMDB9.x"
        XCTAssertEqual(failure(parse(#"{"access_token":"\#(jwt)"}"#))?.counterName, "invalid_response")
    }

    func testUnusableSuccessResponsesAreTransientErrors() {
        let cases = [
            #"{"token_type":"Bearer","expires_in":3600}"#,
            #"{"access_token":"","expires_in":3600}"#,
            #"{"access_token":42}"#,
            #"{"access_token":"a\nb"}"#,
            #"{"access_token":"abc","token_type":"mac"}"#,
            #"{"access_token":"abc","expires_in":0}"#,
            #"{"access_token":"abc","expires_in":"soon"}"#,
            "not json",
            "[1,2]",
        ]
        for body in cases {
            guard let error = failure(parse(body)) else { continue }
            XCTAssertFalse(error.isCredentialsRejected, body)
            XCTAssertEqual(error.counterName, "invalid_response", body)
        }
        let mismatch = failure(parse(#"{"access_token":"secret-token-value","token_type":"mac"}"#))
        XCTAssertEqual(mismatch?.description, "token endpoint answered 200 without a usable token: token_type is \"mac\", not Bearer")
        XCTAssertFalse(mismatch?.description.contains("secret-token-value") ?? true)
    }

    func testOAuthErrorBodies() {
        let rejected = failure(parse(#"{"error":"invalid_client","error_description":"Client authentication failed"}"#, status: 400))
        XCTAssertEqual(rejected?.kind, .oauthError(status: 400, code: "invalid_client", description: "Client authentication failed"))
        XCTAssertEqual(rejected?.isCredentialsRejected, true)
        XCTAssertEqual(rejected?.description, "token endpoint answered HTTP 400 invalid_client: Client authentication failed")
        for code in ["unauthorized_client", "invalid_scope"] {
            XCTAssertEqual(failure(parse(#"{"error":"\#(code)"}"#, status: 400))?.isCredentialsRejected, true, code)
        }
        XCTAssertEqual(failure(parse("", status: 401))?.isCredentialsRejected, true)
        XCTAssertEqual(failure(parse("", status: 401))?.counterName, "credentials_rejected")
        let other = failure(parse(#"{"error":"invalid_request"}"#, status: 400))
        XCTAssertEqual(other?.isCredentialsRejected, false)
        XCTAssertEqual(other?.counterName, "http_other")
        XCTAssertEqual(failure(parse("<html>secret page</html>", status: 404))?.description, "token endpoint answered HTTP 404")
    }

    func testErrorDescriptionIsSanitisedAndTruncated() {
        let long = String(repeating: "x", count: 500)
        let error = failure(parse(#"{"error":"bad\u0000code\r\n","error_description":"line1\nline2 \#(long)"}"#, status: 400))
        guard case .oauthError(_, let code, let description)? = error?.kind else { return XCTFail() }
        XCTAssertEqual(code, "badcode")
        XCTAssertTrue(description?.hasPrefix("line1?line2 xxx") ?? false)
        XCTAssertLessThanOrEqual(description?.count ?? 0, 201)
        XCTAssertFalse(error?.description.contains("\n") ?? true)
    }

    func testRetryAfterOn429And5xxOnly() {
        let limited = failure(parse("", status: 429, fields: [("Retry-After", "30")]))
        XCTAssertEqual(limited?.retryAfter, .seconds(30))
        XCTAssertEqual(limited?.counterName, "http_429")
        let unavailable = failure(parse(#"{"error":"temporarily_unavailable"}"#, status: 503, fields: [("Retry-After", "Sat, 17 Mar 2030 08:00:10 GMT")]))
        XCTAssertEqual(unavailable?.counterName, "http_5xx")
        XCTAssertEqual(unavailable?.isCredentialsRejected, false)
        // 1900000000 = 2030-03-17T17:46:40Z; the date is 9h46m30s earlier → past → zero.
        XCTAssertEqual(unavailable?.retryAfter, .zero)
        XCTAssertNil(failure(parse("", status: 400, fields: [("Retry-After", "30")]))?.retryAfter)
    }

    func testRetryAfterParsing() {
        XCTAssertEqual(RetryAfter.parse("120", wallClock: 0), .seconds(120))
        XCTAssertEqual(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", wallClock: 784_111_777 - 60), .seconds(60))
        XCTAssertNil(RetryAfter.parse("soon", wallClock: 0))
        XCTAssertNil(RetryAfter.parse("-5", wallClock: 0))
    }

    func testADPoPTokenTypeBindsTheGrantOnlyWhenTheRequestCarriedAProof() throws {
        let response = TokenHTTPResponse(status: 200, body: Array(#"{"access_token":"abc","token_type":"DPoP","expires_in":60}"#.utf8))
        let binding = TokenBinding(dpopKey: try DPoPKey.generated())
        let bound = grant(TokenResponseParser.parse(response, defaultLifetime: .seconds(1), wallClock: now, binding: binding))
        XCTAssertTrue(bound?.binding === binding)
        XCTAssertEqual(failure(TokenResponseParser.parse(response, defaultLifetime: .seconds(1), wallClock: now))?.kind,
                       .invalidResponse("token_type is \"DPoP\", not Bearer"), "no proof was sent: the token cannot be presented")

        let bearer = TokenHTTPResponse(status: 200, body: Array(#"{"access_token":"abc","token_type":"Bearer"}"#.utf8))
        XCTAssertNil(grant(TokenResponseParser.parse(bearer, defaultLifetime: .seconds(1), wallClock: now, binding: binding))?.binding,
                     "a bearer answer to a DPoP request is a bearer token")
    }

    func testARotatedRefreshTokenIsReadApartAndAMissingExpiresInFallsBack() {
        func response(_ body: String, status: Int = 200) -> TokenHTTPResponse {
            TokenHTTPResponse(status: status, fields: HTTPFields(), body: Array(body.utf8))
        }
        let body = #"{"access_token":"abc","token_type":"Bearer","refresh_token":"rt-2","scope":"read"}"#
        XCTAssertEqual(TokenResponseParser.rotatedRefreshToken(response(body)), "rt-2")
        XCTAssertEqual(grant(parse(body, defaultLifetime: .seconds(300)))?.lifetime, .seconds(300), "no expires_in: the default lifetime")
        // Kept even when the access token part is unusable: the server rotated all the same.
        XCTAssertEqual(TokenResponseParser.rotatedRefreshToken(response(#"{"access_token":"","refresh_token":"rt-3"}"#)), "rt-3")
        XCTAssertNil(TokenResponseParser.rotatedRefreshToken(response(#"{"access_token":"abc"}"#)))
        XCTAssertNil(TokenResponseParser.rotatedRefreshToken(response(#"{"refresh_token":"rt-4"}"#, status: 400)))
        for bad in [#""refresh_token":"""#, #""refresh_token":7"#, #""refresh_token":"a b""#] {
            XCTAssertNil(TokenResponseParser.rotatedRefreshToken(response("{\"access_token\":\"abc\",\(bad)}")), bad)
            XCTAssertNotNil(grant(parse("{\"access_token\":\"abc\",\(bad)}")), "a client credentials answer with an odd refresh_token still works")
        }
    }

    func testAnIDTokenAnswerWhenTheRequestAskedForOne() {
        let response = TokenHTTPResponse(status: 200, fields: HTTPFields(), body: Array(#"{"id_token":"eyJ.x.y"}"#.utf8))
        guard case .success(let grant) = TokenResponseParser.parse(response, defaultLifetime: .seconds(60), wallClock: now, field: .idToken) else {
            return XCTFail("no grant")
        }
        XCTAssertEqual(grant.value, "eyJ.x.y")
        guard case .failure(let error) = TokenResponseParser.parse(response, defaultLifetime: .seconds(60), wallClock: now) else {
            return XCTFail("an access token answer needs access_token")
        }
        XCTAssertTrue("\(error)".contains("access_token missing"))
    }
}
