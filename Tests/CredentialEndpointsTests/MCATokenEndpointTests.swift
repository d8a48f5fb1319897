import CredentialEndpoints
import XCTest

/// The seed SDK's request, answered as MCA does.
final class MCATokenEndpointTests: XCTestCase {
    private let form = [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")]

    func testTheSeedSDKsRequestGetsThePlaceholderAsMCAAnswers() throws {
        let router = try makeRouter()
        // serverUrl "http://127.0.0.1:9902" + "/" + path, or a serverUrl with a trailing slash.
        for path in ["/authorization/v1/apps/tenant-1/token", "//authorization/v1/apps/tenant-1/token",
                     "/imf-authserver/authorization/v1/apps/tenant-1/token"] {
            let decision = router.decide(request("POST", path, form + [basic("client-1", "anything")], body: "grant_type=client_credentials"))
            XCTAssertEqual(granted(decision)?.0, "mca", path)
            XCTAssertEqual(granted(decision)?.1, .oauth(scope: nil))
        }
        let answer = CredentialEndpointRouter.answer(.oauth(scope: nil), EndpointGrant(token: "tsp_mca_placeholder_0001", expiresAt: 1_800_000_600),
                                                     now: 1_800_000_000)
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.text, #"{"access_token":"tsp_mca_placeholder_0001","token_type":"Bearer","expires_in":600}"#)
        XCTAssertEqual(answer.header("Cache-Control"), "no-store")
        XCTAssertEqual(answer.header("Content-Type"), "application/json")
    }

    func testUnknownTenantOrClientIs401AndOtherMistakesAsOAuthSays() throws {
        let router = try makeRouter()
        let good = "/authorization/v1/apps/tenant-1/token"
        let tenant = answered(router.decide(request("POST", "/authorization/v1/apps/other/token", form + [basic("client-1", "x")],
                                                    body: "grant_type=client_credentials")))
        XCTAssertEqual(tenant?.status, 401)
        XCTAssertEqual(tenant?.header("WWW-Authenticate"), #"Basic realm="imf-authserver""#)
        XCTAssertEqual(answered(router.decide(request("POST", good, form + [basic("other", "x")], body: "grant_type=client_credentials")))?.status, 401)
        XCTAssertEqual(answered(router.decide(request("POST", good, form, body: "grant_type=client_credentials")))?.status, 401, "no client")
        XCTAssertEqual(answered(router.decide(request("POST", good, form + [basic("client-1", "x")], body: "grant_type=password")))?.text,
                       #"{"error":"unsupported_grant_type","error_description":"only client_credentials is supported"}"#)
        XCTAssertEqual(answered(router.decide(request("GET", good, [basic("client-1", "x")])))?.status, 405)
    }
}
