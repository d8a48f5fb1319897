import CredentialEndpoints
import XCTest

/// The GCE metadata server, as google-auth reads it.
final class GCEMetadataEndpointTests: XCTestCase {
    private let google = [("Metadata-Flavor", "Google")]
    private let v1 = "/computeMetadata/v1"

    func testDetectionAccountAndProject() throws {
        let router = try makeRouter()
        let ping = try XCTUnwrap(answered(router.decide(request("GET", "/"))))
        XCTAssertEqual(ping.status, 200, "google.auth.default() detects GCE by this answer's header")
        XCTAssertEqual(ping.header("Metadata-Flavor"), "Google")
        let info = try XCTUnwrap(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/?recursive=true", google))))
        XCTAssertEqual(info.header("Content-Type"), "application/json")
        XCTAssertEqual(info.header("Metadata-Flavor"), "Google")
        XCTAssertEqual(info.text, #"{"aliases":["default"],"email":"app@my-project.iam.gserviceaccount.com","scopes":["https://www.googleapis.com/auth/cloud-platform"]}"#)
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/email", google)))?.text,
                       "app@my-project.iam.gserviceaccount.com")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/scopes", google)))?.text,
                       "https://www.googleapis.com/auth/cloud-platform\n")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/project/project-id", google)))?.text, "my-project")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/", google)))?.text,
                       "default/\napp@my-project.iam.gserviceaccount.com/\n")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/", google)))?.text,
                       "aliases\nemail\nidentity\nscopes\ntoken\n")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/project/?recursive=true", google)))?.text, #"{"projectId":"my-project"}"#)
    }

    func testTheTokenAsGoogleWordsIt() throws {
        let router = try makeRouter()
        for path in ["\(v1)/instance/service-accounts/default/token",
                     "\(v1)/instance/service-accounts/app@my-project.iam.gserviceaccount.com/token",
                     "\(v1)/instance/service-accounts/default/token?scopes=https://www.googleapis.com/auth/cloud-platform"] {
            XCTAssertEqual(granted(router.decide(request("GET", path, google)))?.1, .gceToken, path)
        }
        let answer = CredentialEndpointRouter.answer(.gceToken, EndpointGrant(token: "tsp_gcp_placeholder_00001", expiresAt: 1_800_003_599.5),
                                                     now: 1_800_000_000)
        XCTAssertEqual(answer.text, #"{"access_token":"tsp_gcp_placeholder_00001","expires_in":3599,"token_type":"Bearer"}"#)
        XCTAssertEqual(answer.header("Metadata-Flavor"), "Google")
        XCTAssertEqual(answer.header("Content-Type"), "application/json")
    }

    func testRefusals() throws {
        let router = try makeRouter()
        let token = "\(v1)/instance/service-accounts/default/token"
        XCTAssertEqual(answered(router.decide(request("GET", token)))?.status, 403, "no Metadata-Flavor")
        XCTAssertEqual(answered(router.decide(request("GET", token, [("Metadata-Flavor", "google")])))?.status, 403, "exactly Google")
        XCTAssertEqual(answered(router.decide(request("GET", token, google + [("X-Forwarded-For", "10.0.0.1")])))?.status, 403)
        XCTAssertEqual(answered(router.decide(request("GET", token)))?.header("Content-Type"), "application/text")
        XCTAssertEqual(answered(router.decide(request("POST", token, google)))?.status, 405)
        XCTAssertEqual(granted(router.decide(request("GET", "\(token)?scopes=https://www.googleapis.com/auth/devstorage.read_only,https://www.googleapis.com/auth/pubsub", google)))?.1,
                       .gceToken, "cloud-platform covers the libraries' default scopes")
        let scoped = try makeRouter(endpointsYAML.replacingOccurrences(of: "gcp: {type: static, token: real-gcp-token,",
                                                                       with: "gcp: {type: oauth2, tokenUrl: \"https://idp.test/token\", clientId: g, secret: s, scope: \"https://www.googleapis.com/auth/pubsub\","))
        XCTAssertEqual(answered(scoped.decide(request("GET", "\(token)?scopes=https://www.googleapis.com/auth/gmail", google)))?.status, 400,
                       "a scope the credential's token does not carry")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/other@x/token", google)))?.status, 404)
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/zone", google)))?.status, 404)
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/identity?audience=https://run.test", google)))?.status,
                       400, "a static credential mints no ID token")
        XCTAssertEqual(answered(router.decide(request("GET", "\(v1)/instance/service-accounts/default/identity", google)))?.text,
                       "non-empty audience parameter required")
    }
}
