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

    private let real = SigV4Credentials(accessKeyId: "AKIAREALKEY000000001", secretAccessKey: "real/Secret+Key0000000000000000000000000")

    private func head(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    /// The signature a verifier computes over what arrived: the signed headers' values as sent.
    /// (Computed with the signer's own canonical request: this checks that the edit signs what
    /// it sends; the canonical form itself is checked by AWS's suite and by moto.)
    private func verifies(_ edited: RequestHead, scope: SigV4Scope, payloadHash: String, normalizePath: Bool) throws -> Bool {
        let fields = edited.fields
        guard case .success(let auth) = SigV4Authorization.parse(fields.values("authorization").first ?? "") else { return false }
        let headers = fields.fields.map { (name: $0.name.lowercased(), value: $0.value) }
        let canonical = SigV4Canonical.request(method: edited.method, path: "/bucket/key.txt", query: nil, headers: headers,
                                               signedHeaders: auth.signedHeaders, payloadHash: payloadHash, normalizePath: normalizePath)
        let stringToSign = SigV4Signer.stringToSign(timestamp: fields.values("x-amz-date").first ?? "", scope: scope, canonicalRequest: canonical)
        let signature = SigV4Signer.signature(key: SigV4Signer.signingKey(secret: real.secretAccessKey, scope: scope), stringToSign: stringToSign)
        return fields.values("authorization").first?.hasSuffix("Signature=" + signature) == true
    }

    /// An app that signed its trace context: the sidecar's span replaces `traceparent` and
    /// `tracestate` on the way (RequestRewriter), so the re-signed request leaves them unsigned
    /// and still verifies with another trace context than the app's.
    func testTheTraceContextIsLeftUnsignedSoTheSidecarsSpanDoesNotBreakTheSignature() throws {
        let scope = SigV4Scope(date: "20261130", region: "us-east-1", service: "s3")
        let hash = SigV4Signer.emptyPayloadHash
        let app = try head("GET /bucket/key.txt HTTP/1.1\r\nHost: bucket.s3.amazonaws.com\r\n"
            + "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\ntracestate: app=1\r\n"
            + "x-amz-content-sha256: \(hash)\r\nx-amz-meta-owner: me\r\n"
            + "Authorization: AWS4-HMAC-SHA256 Credential=AKIDTOKENSIDECAR0001/20261130/us-east-1/s3/aws4_request, "
            + "SignedHeaders=host;traceparent;tracestate;x-amz-content-sha256;x-amz-date;x-amz-meta-owner, Signature=00\r\n\r\n")
        let plan = SigV4Plan(credentials: real, scope: scope, appSigned: ["host", "traceparent", "tracestate", "x-amz-content-sha256", "x-amz-date", "x-amz-meta-owner"],
                             payloadHash: hash, timestamp: "20261130T120000Z", host: "bucket.s3.amazonaws.com", normalizePath: false)
        let edited = SigV4Edit.apply(app, plan)
        guard case .success(let auth) = SigV4Authorization.parse(edited.fields.values("authorization").first ?? "") else { return XCTFail("not signed") }
        XCTAssertEqual(auth.signedHeaders, ["host", "x-amz-content-sha256", "x-amz-date", "x-amz-meta-owner"])
        XCTAssertEqual(auth.accessKeyId, real.accessKeyId)
        XCTAssertTrue(try verifies(edited, scope: scope, payloadHash: hash, normalizePath: false))
        // What the upstream receives once the sidecar's span took the trace over: still valid.
        let retraced = edited.edited(target: edited.target) { section, out in
            for line in section.lines {
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: section.bytes[line.name]), as: UTF8.self)
                if name == "traceparent" {
                    out.append(name: Array(name.utf8), value: Array("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01".utf8))
                } else {
                    out.copy(line, from: section)
                }
            }
        }
        XCTAssertTrue(try verifies(retraced, scope: scope, payloadHash: hash, normalizePath: false))
    }

    /// `signUnsigned` to S3: the sidecar hashed the body, and S3 refuses a SigV4 request whose
    /// hash is not in `x-amz-content-sha256`, so it is sent and signed; other services (which
    /// the SDKs send without it) get none.
    func testAnUnsignedS3RequestCarriesTheHashItWasSignedOver() throws {
        let body = Array("hello".utf8)
        let hash = SigV4Body.hashHex(body)
        for (service, sends) in [("s3", true), ("sts", false)] {
            let scope = SigV4Scope(date: "20261130", region: "us-east-1", service: service)
            let app = try head("PUT /bucket/key.txt HTTP/1.1\r\nHost: bucket.s3.amazonaws.com\r\nContent-Length: 5\r\n\r\n")
            var plan = SigV4Plan(credentials: real, scope: scope, appSigned: [], payloadHash: hash, timestamp: "20261130T120000Z",
                                 host: "bucket.s3.amazonaws.com", normalizePath: service != "s3")
            plan.sendsPayloadHash = sends
            let edited = SigV4Edit.apply(app, plan)
            guard case .success(let auth) = SigV4Authorization.parse(edited.fields.values("authorization").first ?? "") else { return XCTFail(service) }
            XCTAssertEqual(edited.fields.values("x-amz-content-sha256"), sends ? [hash] : [], service)
            XCTAssertEqual(auth.signedHeaders.contains("x-amz-content-sha256"), sends, service)
            XCTAssertTrue(try verifies(edited, scope: scope, payloadHash: hash, normalizePath: service != "s3"), service)
        }
    }
}
