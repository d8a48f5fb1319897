import CredentialEndpoints
import XCTest

/// The AWS container credentials endpoint, as botocore's container provider calls it.
final class AWSContainerEndpointTests: XCTestCase {
    func testTheAuthorizationTokenGetsThePlaceholderKeys() throws {
        let router = try makeRouter()
        XCTAssertEqual(granted(router.decide(request("GET", "/aws/credentials", [("Authorization", "aws-secret")])))?.1, .aws)
        let keys = EndpointGrant.AWSKeys(accessKeyId: "AKIDTOKENSIDECAR", secretAccessKey: CredentialEndpointRouter.awsPlaceholderSecret,
                                         sessionToken: CredentialEndpointRouter.awsPlaceholderSessionToken)
        let answer = CredentialEndpointRouter.answer(.aws, EndpointGrant(token: "", expiresAt: nil, aws: keys), now: 1_800_000_000)
        XCTAssertEqual(answer.text, #"{"AccessKeyId":"AKIDTOKENSIDECAR","SecretAccessKey":"token-sidecar-placeholder-secret-not-a-key","Token":"token-sidecar-placeholder-session-token","Expiration":"2027-01-15T09:00:00Z"}"#)
        XCTAssertEqual(answer.header("Content-Type"), "application/json")
    }

    func testRefusals() throws {
        let router = try makeRouter()
        XCTAssertEqual(answered(router.decide(request("GET", "/aws/credentials")))?.status, 401)
        XCTAssertEqual(answered(router.decide(request("GET", "/aws/credentials", [("Authorization", "aws-secret-not")])))?.status, 401)
        XCTAssertEqual(answered(router.decide(request("POST", "/aws/credentials", [("Authorization", "aws-secret")])))?.status, 405)
        let unreadable = try makeRouter(endpointsYAML.replacingOccurrences(of: "/run/aws-auth", with: "/run/missing"))
        XCTAssertEqual(answered(unreadable.decide(request("GET", "/aws/credentials", [("Authorization", "aws-secret")])))?.status, 503)
    }
}
