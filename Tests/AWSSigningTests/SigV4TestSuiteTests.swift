import AWSSigning
import Foundation
import XCTest

/// Every case of AWS's published SigV4 test suite (Fixtures/aws-sig-v4-test-suite): the
/// request of `request.txt` signed with its `context.json` gives exactly the published
/// canonical request, string to sign and signature.
final class SigV4TestSuiteTests: XCTestCase {
    private static var suite: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/aws-sig-v4-test-suite")
    }

    /// One parsed `request.txt`: method, target, headers (folded lines joined), body.
    private struct SuiteRequest {
        var method = ""
        var path = ""
        var query: String?
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
    }

    private func parse(_ text: String) -> SuiteRequest {
        var request = SuiteRequest()
        let (head, body) = text.range(of: "\n\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) } ?? (text, "")
        request.body = Array(body.utf8)
        var lines = head.components(separatedBy: "\n")
        let requestLine = lines.removeFirst()
        let firstSpace = requestLine.firstIndex(of: " ")!
        let lastSpace = requestLine.range(of: " HTTP/", options: .backwards)!.lowerBound
        request.method = String(requestLine[..<firstSpace])
        let target = String(requestLine[requestLine.index(after: firstSpace)..<lastSpace])
        if let mark = target.firstIndex(of: "?") {
            request.path = String(target[..<mark])
            request.query = String(target[target.index(after: mark)...])
        } else {
            request.path = target
        }
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t", !request.headers.isEmpty {
                request.headers[request.headers.count - 1].value += "\n" + line
            } else if let colon = line.firstIndex(of: ":") {
                request.headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
            }
        }
        return request
    }

    func testEveryCaseOfTheSuite() throws {
        let cases = try FileManager.default.contentsOfDirectory(atPath: Self.suite.path).filter { !$0.hasSuffix(".md") }.sorted()
        XCTAssertGreaterThanOrEqual(cases.count, 30, "the suite is there")
        for name in cases {
            let folder = Self.suite.appendingPathComponent(name)
            let context = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("context.json"))) as? [String: Any])
            let credentials = try XCTUnwrap(context["credentials"] as? [String: Any])
            var request = parse(try String(contentsOf: folder.appendingPathComponent("request.txt"), encoding: .utf8))
            let timestamp = (context["timestamp"] as? String ?? "").replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
            let scope = SigV4Scope(date: String(timestamp.prefix(8)), region: context["region"] as? String ?? "",
                                   service: context["service"] as? String ?? "")
            request.headers.append(("X-Amz-Date", timestamp))
            if let token = credentials["token"] as? String, context["omit_session_token"] as? Bool != true {
                request.headers.append(("X-Amz-Security-Token", token))
            }
            let payloadHash = context["sign_body"] as? Bool == true ? SigV4Body.hashHex(request.body) : SigV4Signer.emptyPayloadHash
            // A signed body's hash is sent (and signed) as x-amz-content-sha256, as the SDKs do.
            if context["sign_body"] as? Bool == true { request.headers.append(("X-Amz-Content-Sha256", payloadHash)) }
            let signed = Set(request.headers.map { $0.name.lowercased() }).sorted()
            let canonical = SigV4Canonical.request(method: request.method, path: request.path, query: request.query, headers: request.headers,
                                                   signedHeaders: signed, payloadHash: payloadHash,
                                                   normalizePath: context["normalize"] as? Bool ?? true)
            XCTAssertEqual(canonical, try String(contentsOf: folder.appendingPathComponent("header-canonical-request.txt"), encoding: .utf8),
                           "\(name): canonical request")
            let stringToSign = SigV4Signer.stringToSign(timestamp: timestamp, scope: scope, canonicalRequest: canonical)
            XCTAssertEqual(stringToSign, try String(contentsOf: folder.appendingPathComponent("header-string-to-sign.txt"), encoding: .utf8),
                           "\(name): string to sign")
            let key = SigV4Signer.signingKey(secret: credentials["secret_access_key"] as? String ?? "", scope: scope)
            XCTAssertEqual(SigV4Signer.signature(key: key, stringToSign: stringToSign),
                           try String(contentsOf: folder.appendingPathComponent("header-signature.txt"), encoding: .utf8)
                               .trimmingCharacters(in: .whitespacesAndNewlines), "\(name): signature")
        }
    }

    func testTheInboundAuthorizationParsesAndOtherSchemesAreNamed() {
        let value = "AWS4-HMAC-SHA256 Credential=AKIDTOKENSIDECAR0001/20260101/eu-west-1/s3/aws4_request, SignedHeaders=host;X-Amz-Date, Signature=abc"
        guard case .success(let parsed) = SigV4Authorization.parse(value) else { return XCTFail("not parsed") }
        XCTAssertEqual(parsed.accessKeyId, "AKIDTOKENSIDECAR0001")
        XCTAssertEqual(parsed.scope, SigV4Scope(date: "20260101", region: "eu-west-1", service: "s3"))
        XCTAssertEqual(parsed.signedHeaders, ["host", "x-amz-date"])
        XCTAssertEqual(SigV4Authorization.parse("AWS4-ECDSA-P256-SHA256 Credential=A/20260101/s3/aws4_request, SignedHeaders=host, Signature=1"),
                       .failure(.otherScheme("AWS4-ECDSA-P256-SHA256")))
        XCTAssertEqual(SigV4Authorization.parse("Bearer abc"), .failure(.otherScheme("Bearer")))
        XCTAssertEqual(SigV4Authorization.parse("AWS4-HMAC-SHA256 Credential=A/2026/us/s3/aws4_request, SignedHeaders=host, Signature=1"),
                       .failure(.malformed("Credential")))
        XCTAssertEqual(SigV4Authorization.parse("AWS4-HMAC-SHA256 Credential=A/20260101/us/s3/aws4_request, Signature=1"),
                       .failure(.malformed("SignedHeaders")))
    }
}
