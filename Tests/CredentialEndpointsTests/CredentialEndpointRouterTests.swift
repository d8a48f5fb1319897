import CredentialEndpoints
import XCTest

/// Which endpoint a path is for, and what no endpoint serves.
final class CredentialEndpointRouterTests: XCTestCase {
    func testUnknownPathsAre404ListingTheEndpoints() throws {
        let router = try makeRouter()
        let answer = try XCTUnwrap(answered(router.decide(request("GET", "/latest/meta-data/"))))
        XCTAssertEqual(answer.status, 404)
        XCTAssertTrue(answer.text.contains("POST /authorization/v1/apps/{tenantId}/token"), answer.text)
        XCTAssertNil(router.endpoint(forPath: "/computeMetadataX"))
        XCTAssertEqual(router.endpoint(forPath: "/computeMetadata/v1/project/project-id")?.config.kind, .gce)
        XCTAssertNil(router.endpoint(forPath: "/authorization/v1/apps//token"), "no tenant")
    }

    func testAnEndpointOnlyWhereConfigured() throws {
        let router = try makeRouter("""
            credentials:
              partner: {type: oauth2, tokenUrl: "https://idp.test/token", clientId: partner-app, secret: s, placeholder: tsp_partner_placeholder_01}
            credentialEndpoints:
              oauth2: {credential: partner, path: /token}
            """)
        XCTAssertEqual(router.endpoints.map(\.config.kind), [.oauth2])
        XCTAssertEqual(answered(router.decide(request("GET", "/")))?.status, 404, "no GCE endpoint configured")
        XCTAssertEqual(answered(router.decide(request("POST", "/oauth/token")))?.status, 404, "its path is /token")
        XCTAssertEqual(answered(router.decide(request("POST", "/token")))?.status, 401)
    }
}
