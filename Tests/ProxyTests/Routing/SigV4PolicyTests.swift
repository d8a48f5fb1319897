import AWSSigning
import Config
import HTTP1
import XCTest
@testable import Proxy

/// Which SigV4 requests are re-signed and which are refused, with what.
final class SigV4PolicyTests: XCTestCase {
    private let settings = SigV4RouteSettings(allowedRegions: ["us-east-1"], allowedServices: ["s3", "sts"],
                                              placeholderAccessKeyId: "AKIDTOKENSIDECAR0001")

    private func decide(_ lines: [String], target: String = "/b/k", host: String = "b.s3.amazonaws.com",
                        signUnsigned: Bool = false) throws -> Result<SigV4Request, ProxyError> {
        let text = "PUT \(target) HTTP/1.1\r\nHost: \(host)\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n"
        let head = try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
        var settings = settings
        settings.signUnsigned = signUnsigned
        return SigV4Policy.decide(head, settings: settings)
    }

    private func auth(key: String = "AKIDTOKENSIDECAR0001", region: String = "us-east-1", service: String = "s3",
                      scheme: String = "AWS4-HMAC-SHA256") -> String {
        "Authorization: \(scheme) Credential=\(key)/20261128/\(region)/\(service)/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"
    }

    private func refusal(_ result: Result<SigV4Request, ProxyError>) -> (Int, String)? {
        guard case .failure(let error) = result else { return nil }
        return (error.status, error.message)
    }

    func testThePlaceholdersSignatureIsReSigned() throws {
        let accepted = try decide([auth(), "x-amz-content-sha256: UNSIGNED-PAYLOAD"]).get()
        XCTAssertEqual(accepted.scope.service, "s3")
        XCTAssertEqual(accepted.appSigned, ["host", "x-amz-date"])
        XCTAssertEqual(accepted.contentSHA256, "UNSIGNED-PAYLOAD")
        XCTAssertFalse(accepted.normalizePath, "S3 paths as they are")
    }

    func testEveryRefusalNamesItsReason() throws {
        XCTAssertEqual(refusal(try decide([auth(key: "AKIAOTHERKEY00000000")]))?.0, 403)
        XCTAssertEqual(refusal(try decide([auth(region: "eu-west-1")]))?.1, "region eu-west-1 is not among the route's allowedRegions")
        XCTAssertEqual(refusal(try decide([auth(service: "dynamodb")]))?.1, "service dynamodb is not among the route's allowedServices")
        XCTAssertEqual(refusal(try decide([auth(scheme: "AWS4-ECDSA-P256-SHA256")]))?.1, "SigV4A (AWS4-ECDSA-P256-SHA256) is not re-signed")
        XCTAssertEqual(refusal(try decide([auth(), "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD"]))?.0, 400)
        XCTAssertEqual(refusal(try decide([], target: "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a&X-Amz-Signature=b"))?.0, 400)
        XCTAssertEqual(refusal(try decide([]))?.1, "the request is not signed (SigV4 with the placeholder access key id is required on this route)")
        XCTAssertEqual(refusal(try decide(["Authorization: Bearer x"]))?.1, "the request is not signed with SigV4 (Bearer)")
    }

    func testAnUnsignedRequestIsSignedForItsHostOnlyWhereTheRouteOptsIn() throws {
        let signed = try decide(["Content-Type: text/plain", "X-Amz-Meta-Owner: me", "x-amz-content-sha256: UNSIGNED-PAYLOAD"],
                                signUnsigned: true).get()
        XCTAssertEqual(signed.scope.region, "us-east-1")
        XCTAssertEqual(signed.scope.service, "s3")
        XCTAssertEqual(signed.appSigned, ["content-type", "host", "x-amz-content-sha256", "x-amz-meta-owner"])
        XCTAssertFalse(signed.needsBodyHash)
        XCTAssertEqual(refusal(try decide([], host: "sqs.eu-west-1.amazonaws.com", signUnsigned: true))?.0, 403, "region outside the list")
        XCTAssertEqual(refusal(try decide([], host: "s3.test", signUnsigned: true))?.1,
                       "the request is not signed and its host is not an AWS endpoint whose region and service are known")
    }

    func testARequestWithoutAPayloadHashNeedsItsBodyHashed() throws {
        XCTAssertTrue(try decide([auth(service: "sts")]).get().needsBodyHash)
        XCTAssertTrue(try decide([auth(service: "sts")]).get().normalizePath)
    }
}
