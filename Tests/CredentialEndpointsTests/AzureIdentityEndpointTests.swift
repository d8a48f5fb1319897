import CredentialEndpoints
import XCTest

/// Azure managed identity in both forms, as azure-identity calls them.
final class AzureIdentityEndpointTests: XCTestCase {
    private let resource = "https%3A%2F%2Fvault.azure.net"

    func testAppServiceForm() throws {
        let router = try makeRouter()
        let decision = router.decide(request("GET", "/msi/token?api-version=2019-08-01&resource=\(resource)", [("X-IDENTITY-HEADER", "identity-secret")]))
        XCTAssertEqual(granted(decision)?.1, .azureAppService(resource: "https://vault.azure.net", clientId: "0000-entra"))
        let answer = CredentialEndpointRouter.answer(.azureAppService(resource: "https://vault.azure.net", clientId: "0000-entra"),
                                                     EndpointGrant(token: "tsp_entra_placeholder_0001", expiresAt: 1_800_003_600), now: 1_800_000_000)
        XCTAssertEqual(answer.text, #"{"access_token":"tsp_entra_placeholder_0001","expires_on":"1800003600","resource":"https://vault.azure.net","token_type":"Bearer","client_id":"0000-entra"}"#)
        XCTAssertEqual(answer.header("Content-Type"), "application/json")
        XCTAssertEqual(answer.header("Cache-Control"), "no-store")
    }

    func testIMDSForm() throws {
        let router = try makeRouter()
        let decision = router.decide(request("GET", "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=\(resource)", [("Metadata", "true")]))
        XCTAssertEqual(granted(decision)?.1, .azureIMDS(resource: "https://vault.azure.net", clientId: "0000-entra"))
        let answer = CredentialEndpointRouter.answer(.azureIMDS(resource: "https://vault.azure.net", clientId: "0000-entra"),
                                                     EndpointGrant(token: "tsp_entra_placeholder_0001", expiresAt: 1_800_003_600), now: 1_800_000_000)
        XCTAssertEqual(answer.text, #"{"access_token":"tsp_entra_placeholder_0001","client_id":"0000-entra","expires_in":"3600","expires_on":"1800003600","ext_expires_in":"3600","not_before":"1800000000","resource":"https://vault.azure.net","token_type":"Bearer"}"#)
    }

    func testRefusals() throws {
        let router = try makeRouter()
        let appService = "/msi/token?api-version=2019-08-01&resource=\(resource)"
        XCTAssertEqual(answered(router.decide(request("GET", appService)))?.status, 401, "no identity header")
        XCTAssertEqual(answered(router.decide(request("GET", appService, [("X-IDENTITY-HEADER", "guess")])))?.status, 401)
        XCTAssertEqual(answered(router.decide(request("POST", appService, [("X-IDENTITY-HEADER", "identity-secret")])))?.status, 405)
        XCTAssertEqual(answered(router.decide(request("GET", "/msi/token?api-version=2019-08-01", [("X-IDENTITY-HEADER", "identity-secret")])))?.text,
                       #"{"error":"invalid_request","error_description":"Required query variable 'resource' is missing"}"#)
        XCTAssertEqual(answered(router.decide(request("GET", appService + "&client_id=other", [("X-IDENTITY-HEADER", "identity-secret")])))?.status, 400)
        XCTAssertEqual(granted(router.decide(request("GET", appService + "&client_id=0000-entra", [("X-IDENTITY-HEADER", "identity-secret")])))?.0,
                       "entra", "its own client id")
        let imds = "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=\(resource)"
        XCTAssertEqual(answered(router.decide(request("GET", imds)))?.status, 400, "no Metadata: true")
        XCTAssertEqual(answered(router.decide(request("GET", imds, [("Metadata", "true"), ("X-Forwarded-For", "10.1.1.1")])))?.status, 403)
    }
}
