import CredentialEndpoints
import XCTest

/// An RFC 6749 token endpoint for client-credentials libraries.
final class OAuth2TokenEndpointTests: XCTestCase {
    func testBasicOrFormAuthenticationWithTheCredentialsClientIdAndAnySecret() throws {
        let router = try makeRouter()
        XCTAssertEqual(granted(router.decide(request("POST", "/oauth/token", [basic("partner-app", "whatever")],
                                                     body: "grant_type=client_credentials")))?.1, .oauth(scope: nil))
        XCTAssertEqual(granted(router.decide(request("POST", "/oauth/token", [],
                                                     body: "grant_type=client_credentials&client_id=partner-app&client_secret=x&scope=read")))?.1,
                       .oauth(scope: "read"))
        let answer = CredentialEndpointRouter.answer(.oauth(scope: "read"), EndpointGrant(token: "tsp_partner_placeholder_01", expiresAt: nil),
                                                     now: 1_800_000_000)
        XCTAssertEqual(answer.text, #"{"access_token":"tsp_partner_placeholder_01","token_type":"Bearer","expires_in":3600,"scope":"read"}"#)
    }

    func testRefusals() throws {
        let router = try makeRouter()
        let other = answered(router.decide(request("POST", "/oauth/token", [basic("someone", "x")], body: "grant_type=client_credentials")))
        XCTAssertEqual(other?.status, 401)
        XCTAssertEqual(other?.header("WWW-Authenticate"), #"Basic realm="token-sidecar""#)
        let scope = answered(router.decide(request("POST", "/oauth/token", [basic("partner-app", "x")],
                                                   body: "grant_type=client_credentials&scope=admin")))
        XCTAssertEqual(scope?.status, 400)
        XCTAssertTrue(scope?.text.contains(#""error":"invalid_scope""#) ?? false)
        XCTAssertEqual(answered(router.decide(request("POST", "/oauth/token", [basic("partner-app", "x")],
                                                      body: "grant_type=client_credentials&client_id=partner-app&client_secret=x")))?.status, 400,
                       "two authentication methods at once")
        XCTAssertEqual(answered(router.decide(request("PUT", "/oauth/token", [basic("partner-app", "x")])))?.status, 405)
    }

    func testACredentialWithoutScopesTakesAnyAndBasicWithTheSameClientIdInTheFormIsOneMethod() throws {
        let router = try makeRouter("""
            credentials:
              plain: {type: oauth2, tokenUrl: "https://idp.test/token", clientId: app, secret: s, placeholder: tsp_plain_placeholder_001}
            credentialEndpoints:
              oauth2: {credential: plain}
            """)
        XCTAssertEqual(granted(router.decide(request("POST", "/oauth/token", [basic("app", "x")],
                                                     body: "grant_type=client_credentials&scope=anything&client_id=app")))?.1, .oauth(scope: nil))
        XCTAssertEqual(answered(router.decide(request("POST", "/oauth/token", [basic("someone", "x")], body: "grant_type=password")))?.status,
                       401, "the client first: a wrong one is 401 whatever it asks")
    }
}
