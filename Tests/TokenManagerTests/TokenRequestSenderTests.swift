import EventLoop
import Foundation
import HTTP1
@testable import TokenManager
import XCTest

/// The token endpoint's DPoP nonce challenge (RFC 9449 §8): answered by one new request with a
/// fresh proof carrying the nonce, never a second, and only for a request that carried a proof.
final class TokenRequestSenderTests: XCTestCase {
    /// Answers each request with the next canned response, recording what was sent.
    private final class ScriptedTransport: TokenTransport {
        var answers: [TokenHTTPResponse]
        var sent: [TokenEndpointRequest] = []
        init(_ answers: [TokenHTTPResponse]) { self.answers = answers }
        func send(_ request: TokenEndpointRequest, completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void) {
            sent.append(request)
            completion(.success(answers.removeFirst()))
        }
    }

    private let challenge = { (nonce: String) in
        TokenHTTPResponse(status: 400, fields: HTTPFields([HTTPField(name: "DPoP-Nonce", value: nonce)]),
                          body: Array(#"{"error":"use_dpop_nonce"}"#.utf8))
    }
    private let issued = TokenHTTPResponse(status: 200, body: Array(#"{"access_token":"t","token_type":"DPoP"}"#.utf8))

    private func source(dpop: Bool) throws -> TokenRequestSource {
        var source = TokenRequestSource.fixed(try TokenEndpointRequest.oauth2(tokenURL: "https://as.test/token?x=1", clientId: "c",
                                                                              secret: "s"))
        if dpop { source.dpop = DPoPKeySource(key: try DPoPKey.generated()) }
        return source
    }

    private func nonce(in request: TokenEndpointRequest) throws -> String? {
        let proof = try XCTUnwrap(request.fields.first("DPoP"))
        let payload = try XCTUnwrap(Base64.decodeURL(proof.split(separator: ".")[1]))
        let claims = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        XCTAssertEqual(claims["htu"] as? String, "https://as.test/token", "htu without the query")
        XCTAssertEqual(claims["htm"] as? String, "POST")
        return claims["nonce"] as? String
    }

    func testAChallengeIsAnsweredOnceWithTheNonceAndTheNonceIsKept() throws {
        let source = try source(dpop: true)
        let transport = ScriptedTransport([challenge("n1"), issued, issued])
        var answered: TokenEndpointRequest?
        try TokenRequestSender.send(source, via: transport) { request, _ in answered = request }
        XCTAssertEqual(transport.sent.count, 2)
        XCTAssertNil(try nonce(in: transport.sent[0]))
        XCTAssertEqual(try nonce(in: transport.sent[1]), "n1")
        XCTAssertEqual(answered, transport.sent[1], "the response answers the retry")
        try TokenRequestSender.send(source, via: transport) { _, _ in }
        XCTAssertEqual(try nonce(in: transport.sent[2]), "n1", "the next fetch sends the nonce at once")
        XCTAssertEqual(source.dpop?.nonces.retries.tokenEndpoint, 1)
    }

    func testASecondChallengeIsTheAnswerNotALoop() throws {
        let transport = ScriptedTransport([challenge("n1"), challenge("n2"), issued])
        var status: Int?
        try TokenRequestSender.send(try source(dpop: true), via: transport) { _, result in status = try? result.get().status }
        XCTAssertEqual(transport.sent.count, 2)
        XCTAssertEqual(status, 400)
    }

    func testAChallengeRepeatingTheNonceSentOrToAPlainRequestIsNotRetried() throws {
        let source = try source(dpop: true)
        source.dpop?.nonces.remember("n1", for: "https://as.test")
        let same = ScriptedTransport([challenge("n1"), issued])
        try TokenRequestSender.send(source, via: same) { _, _ in }
        XCTAssertEqual(same.sent.count, 1, "the same nonce again would be refused again")

        let plain = ScriptedTransport([challenge("n1"), issued])
        try TokenRequestSender.send(try self.source(dpop: false), via: plain) { _, _ in }
        XCTAssertEqual(plain.sent.count, 1)
        XCTAssertNil(plain.sent[0].fields.first("DPoP"))
    }

    func testTwoConcurrentFetchesChallengedWithTheSameNonceBothRetry() throws {
        // Per-request token variants share one key and one nonce store: two fetches go out before
        // either answer, and the first answer stores the nonce the second one also needs.
        final class HeldTransport: TokenTransport {
            var sent: [TokenEndpointRequest] = []
            var pending: [(Result<TokenHTTPResponse, TokenTransportError>) -> Void] = []
            func send(_ request: TokenEndpointRequest, completion: @escaping (Result<TokenHTTPResponse, TokenTransportError>) -> Void) {
                sent.append(request)
                pending.append(completion)
            }
        }
        let source = try source(dpop: true)
        let transport = HeldTransport()
        try TokenRequestSender.send(source, via: transport) { _, _ in }
        try TokenRequestSender.send(source, via: transport) { _, _ in }
        XCTAssertEqual(transport.sent.count, 2)
        let answers = transport.pending
        answers[0](.success(challenge("n1")))
        answers[1](.success(challenge("n1")))
        XCTAssertEqual(transport.sent.count, 4, "each fetch retries once with the nonce")
        XCTAssertEqual(try nonce(in: transport.sent[2]), "n1")
        XCTAssertEqual(try nonce(in: transport.sent[3]), "n1")
        XCTAssertEqual(source.dpop?.nonces.retries.tokenEndpoint, 2)
    }

    func testNoncesAreValidatedAndBounded() {
        let nonces = DPoPNonces()
        nonces.remember("has space", for: "https://a")
        nonces.remember("quote\"", for: "https://a")
        XCTAssertNil(nonces.nonce(for: "https://a"), "not NQCHAR: never sent back")
        for index in 0..<(DPoPNonces.capacity + 10) { nonces.remember("n\(index)", for: "https://o\(index)") }
        let kept = (0..<(DPoPNonces.capacity + 10)).filter { nonces.nonce(for: "https://o\($0)") != nil }
        XCTAssertEqual(kept.count, DPoPNonces.capacity)
        XCTAssertNotNil(nonces.nonce(for: "https://o\(DPoPNonces.capacity + 9)"), "the newest is kept")
        nonces.remember("newer", for: "https://o\(DPoPNonces.capacity + 9)")
        XCTAssertEqual(nonces.nonce(for: "https://o\(DPoPNonces.capacity + 9)"), "newer")
    }
}
