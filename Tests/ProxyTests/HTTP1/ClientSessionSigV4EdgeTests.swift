import AWSSigning
import EventLoop
import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// A `sigv4` route at the edges of an exchange, over in-memory streams: a body the sidecar must
/// hash (no `x-amz-content-sha256`) is held whole before the signed head can go, so a client
/// that sends it a byte at a time is signed over all of it, and one that leaves before its end
/// has nothing forwarded; a streamed body (`UNSIGNED-PAYLOAD`) cut short resets the upstream.
final class ClientSessionSigV4EdgeTests: XCTestCase {
    private let real = SigV4Credentials(accessKeyId: "AKIAREALKEY000000001", secretAccessKey: "real/Secret+Key0000000000000000000000000")

    private func harness() throws -> SessionHarness {
        try SessionHarness(credential: FixedCredential(value: real.tokenValue),
                           credentialYAML: "{type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR0001, accessKeyIdFile: /none/id, secretAccessKeyFile: /none/secret}",
                           route: ["inject: {sigv4: {allowedServices: [sqs]}}"])
    }

    private func head(length: Int, payload: String? = nil) -> String {
        "POST http://api.test/ HTTP/1.1\r\nHost: api.test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + "X-Amz-Date: 20261130T120000Z\r\n" + (payload.map { "X-Amz-Content-Sha256: \($0)\r\n" } ?? "")
            + "Authorization: AWS4-HMAC-SHA256 Credential=AKIDTOKENSIDECAR0001/20261130/us-east-1/sqs/aws4_request, "
            + "SignedHeaders=content-type;host;x-amz-date, Signature=00\r\nContent-Length: \(length)\r\n\r\n"
    }

    func testAHeldBodySentAByteAtATimeIsSignedOverAllOfIt() throws {
        let harness = try harness()
        let client = harness.connectClient()
        let body = "Action=SendMessage&MessageBody=hello"
        for byte in Array((head(length: body.utf8.count) + body).utf8) {
            XCTAssertNil(harness.connectedBackend(), "nothing goes before the body is whole")
            client.receive([byte])
        }
        let backend = try XCTUnwrap(harness.connectedBackend())
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), body)
        let authorization = request.headers("Authorization").first ?? ""
        XCTAssertTrue(authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIAREALKEY000000001/"), authorization)
        XCTAssertFalse(authorization.contains("AKIDTOKENSIDECAR0001"))
        // Signed over this body: the signature computed from what arrived (with the signer's own
        // canonical form, which AWS's suite and moto check elsewhere).
        let date = request.headers("X-Amz-Date").first ?? ""
        let scope = SigV4Scope(date: String(date.prefix(8)), region: "us-east-1", service: "sqs")
        let canonical = SigV4Canonical.request(method: "POST", path: "/", query: nil,
                                               headers: request.headers.map { (name: $0.name, value: $0.value) },
                                               signedHeaders: ["content-type", "host", "x-amz-date"],
                                               payloadHash: SigV4Body.hashHex(Array(body.utf8)), normalizePath: true)
        let signature = SigV4Signer.signature(key: SigV4Signer.signingKey(secret: real.secretAccessKey, scope: scope),
                                              stringToSign: SigV4Signer.stringToSign(timestamp: date, scope: scope, canonicalRequest: canonical))
        XCTAssertTrue(authorization.hasSuffix("Signature=" + signature), authorization)
    }

    /// Bytes past the held body's length are not part of it: the signed body is exactly its
    /// length, and what follows is the connection's next request, refused on its own merits
    /// (unsigned: 400), never glued to the first.
    func testBytesPastAHeldBodyAreNotSignedWithIt() throws {
        let harness = try harness()
        let client = harness.connectClient()
        let body = "Action=ListQueues"
        client.receive(head(length: body.utf8.count) + body + "GET http://api.test/next HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let backend = try XCTUnwrap(harness.connectedBackend())
        let requests = MemoryMessages.requests(backend.peerReads())
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests.first.map { String(decoding: $0.body, as: UTF8.self) }, body)
        backend.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let answers = client.readAll()
        XCTAssertTrue(answers.hasPrefix("HTTP/1.1 200 OK"), answers)
        XCTAssertTrue(answers.contains("HTTP/1.1 400 "), "the next request, unsigned, refused: \(answers)")
        XCTAssertEqual(harness.targets.count, 1, "only the signed request went upstream")
    }

    func testAClientThatLeavesBeforeItsHeldBodyEndsHasNothingForwarded() throws {
        for end in [ConnectionEnd.endOfStream, .socketError(errno: ECONNRESET)] {
            let harness = try harness()
            let client = harness.connectClient()
            client.receive(head(length: 1000) + String(repeating: "a", count: 500))
            client.end(end)
            XCTAssertNil(harness.connectedBackend(), "\(end)")
            XCTAssertEqual(harness.targets.count, 0, "no upstream connection was even asked for (\(end))")
        }
    }

    func testAStreamedUnsignedPayloadCutShortResetsTheUpstream() throws {
        let harness = try harness()
        let client = harness.connectClient()
        // Past the 64 KiB collected before a backend is taken.
        client.receive(head(length: 200_000, payload: "UNSIGNED-PAYLOAD") + String(repeating: "a", count: 70_000))
        let backend = try XCTUnwrap(harness.connectedBackend())
        let sent = String(decoding: backend.peerReads(), as: UTF8.self)
        XCTAssertTrue(sent.contains("Credential=AKIAREALKEY000000001/"), String(sent.prefix(400)))
        client.end(.endOfStream)
        XCTAssertEqual(backend.ending, .reset, "never an upload that looks complete")
        XCTAssertEqual(harness.pooled("idle"), 0)
    }
}
