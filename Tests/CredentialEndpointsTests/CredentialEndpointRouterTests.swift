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

    func testRelayedRequestsAndForeignHostsAreRefusedByEveryEndpoint() throws {
        let router = try makeRouter()
        let requests = [
            request("POST", "/authorization/v1/apps/tenant-1/token", [basic("client-1", "x")], body: "grant_type=client_credentials"),
            request("POST", "/oauth/token", [basic("partner-app", "x")], body: "grant_type=client_credentials"),
            request("GET", "/computeMetadata/v1/instance/service-accounts/default/token", [("Metadata-Flavor", "Google")]),
            request("GET", "/msi/token?api-version=2019-08-01&resource=r", [("X-IDENTITY-HEADER", "identity-secret")]),
            request("GET", "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=r", [("Metadata", "true")]),
            request("GET", "/aws/credentials", [("Authorization", "aws-secret")]),
        ]
        for original in requests {
            XCTAssertNotNil(granted(router.decide(original)), original.path)
            for relay in [("Via", "1.1 token-sidecar"), ("Forwarded", "for=10.0.0.1"), ("X-Forwarded-For", "10.0.0.1"),
                          ("Host", "evil.example:9902")] {
                var relayed = original
                relayed.fields.append(relay.0, relay.1)
                XCTAssertEqual(answered(router.decide(relayed))?.status, 403, "\(original.path) with \(relay.0)")
            }
            for host in ["127.0.0.1:9902", "localhost:9902", "[::1]:9902", "metadata.google.internal", "169.254.169.254", "169.254.170.23"] {
                var local = original
                local.fields.append("Host", host)
                XCTAssertNotNil(granted(router.decide(local)), "\(original.path) to \(host)")
            }
        }
        let gce = try XCTUnwrap(answered(router.decide(request("GET", "/", [("Via", "1.1 proxy")]))))
        XCTAssertEqual(gce.header("Metadata-Flavor"), "Google", "refused as the metadata server words it")
        XCTAssertEqual(answered(router.decide(request("GET", "/nowhere")))?.header("Metadata-Flavor"), "Google")
    }

    func testUnavailableIsWordedAsEachServiceWordsItsErrors() {
        XCTAssertEqual(CredentialEndpointRouter.refusal(.oauth2, status: 503, code: "temporarily_unavailable", "no token yet").text,
                       #"{"error":"temporarily_unavailable","error_description":"no token yet"}"#)
        XCTAssertEqual(CredentialEndpointRouter.refusal(.azure, status: 503, code: "temporarily_unavailable", "no token yet").text,
                       #"{"error":"temporarily_unavailable","error_description":"no token yet"}"#)
        XCTAssertEqual(CredentialEndpointRouter.refusal(.aws, status: 503, code: "temporarily_unavailable", "no token yet").text,
                       #"{"code":"Error","message":"no token yet"}"#)
        let gce = CredentialEndpointRouter.refusal(.gce, status: 503, code: "temporarily_unavailable", "no token yet", headers: [("Retry-After", "1")])
        XCTAssertEqual(gce.text, "no token yet")
        XCTAssertEqual(gce.header("Metadata-Flavor"), "Google")
        XCTAssertEqual(gce.header("Retry-After"), "1")
    }
}
