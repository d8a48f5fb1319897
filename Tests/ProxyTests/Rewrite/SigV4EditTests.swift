import AWSSigning
import Crypto
import Foundation
import HTTP1
import TestSupport
import XCTest
@testable import Proxy

/// Re-signing against botocore: requests an SDK signed with placeholder keys (S3 with an
/// awkward key, a listing query, DynamoDB, SQS, STS), re-signed with the real keys, carry
/// exactly the `Authorization` botocore computes with the real keys.
final class SigV4EditTests: XCTestCase {
    func testReSignedRequestsMatchWhatBotocoreSignsWithTheRealKeys() throws {
        let outcome = try Command.run([AWSPython.path, FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/sigv4_vectors.py").path])
        XCTAssertEqual(outcome.status, 0, "botocore (make aws-venv): \(outcome.err.suffix(300))")
        let vectors = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [[String: Any]])
        XCTAssertEqual(vectors.count, 5)
        let real = SigV4Credentials(accessKeyId: "AKIAREALKEY000000001", secretAccessKey: "real/Secret+Key0000000000000000000000000",
                                    sessionToken: "real-session-token")
        for vector in vectors {
            let service = vector["service"] as? String ?? ""
            let app = try XCTUnwrap(vector["app"] as? [String: String])
            let expected = try XCTUnwrap(vector["real"] as? [String: String])
            let host = vector["host"] as? String ?? ""
            var text = "\(vector["method"] as? String ?? "") \(vector["path"] as? String ?? "") HTTP/1.1\r\nHost: \(host)\r\n"
            for (name, value) in app { text += "\(name): \(value)\r\n" }
            let head = try Array((text + "\r\n").utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
            guard case .success(let signed) = SigV4Authorization.parse(app["Authorization"] ?? "") else { return XCTFail("\(service): no SigV4") }
            let body = Array((vector["body"] as? String ?? "").utf8)
            let plan = SigV4Plan(credentials: real, scope: signed.scope, appSigned: signed.signedHeaders,
                                 payloadHash: app["X-Amz-Content-SHA256"] ?? SigV4Body.hashHex(body),
                                 timestamp: expected["X-Amz-Date"] ?? "", host: host, normalizePath: service != "s3")
            let edited = SigV4Edit.apply(head, plan)
            let fields = edited.fields
            XCTAssertEqual(fields.values("authorization"), [expected["Authorization"] ?? ""], "\(service)")
            XCTAssertEqual(fields.values("x-amz-security-token"), ["real-session-token"], service)
            XCTAssertEqual(fields.values("x-amz-date"), [expected["X-Amz-Date"] ?? ""], service)
            XCTAssertFalse(fields.fields.contains { $0.value.contains("AKIDTOKENSIDECAR0001") }, "the placeholder is gone")
        }
    }
}
