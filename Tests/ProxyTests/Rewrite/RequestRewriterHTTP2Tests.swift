import Foundation
import HTTP1
import HTTP2
import TokenManager
import XCTest
@testable import Proxy

/// The upstream request for an HTTP/2 upstream as a typed head: the same rewrite as the
/// HTTP/1.1 text head, as name/value pairs.
final class RequestRewriterHTTP2Tests: XCTestCase {
    private func parse(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private func decision(credential: (any Credential)?) -> RouteDecision {
        RouteDecision(target: UpstreamTarget(host: "backend", port: 8080, tls: nil, poolKey: "backend|8080", allowsLinkLocal: false),
                      hostField: "backend:8080", credential: credential, routeName: "api.test:80")
    }

    private func pairs(_ head: HTTP2Head) -> [String] { head.fields.map { "\($0.name): \($0.value)" } }

    func testTheTokenIsTheOnlyAuthorizationAndNoHopByHopFieldGoes() throws {
        let head = try parse("POST http://api.test/x?y=1 HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer evil\r\n"
                             + "Connection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\n"
                             + "Content-Type: application/grpc\r\nContent-Length: 5\r\nDPoP: app-proof\r\nAccept: */*\r\n\r\n")
        let h2 = RequestRewriter.http2Head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "abc")),
                                           token: AccessToken(value: "abc"), scheme: "https")
        XCTAssertEqual(h2.method, "POST")
        XCTAssertEqual(h2.scheme, "https")
        XCTAssertEqual(h2.authority, "backend:8080", "the route's Host")
        XCTAssertEqual(h2.path, "/x?y=1", "origin-form")
        XCTAssertEqual(pairs(h2), ["Content-Type: application/grpc", "Accept: */*", "content-length: 5",
                                   "authorization: Bearer abc", "via: 1.1 token-sidecar", "te: trailers"])
    }

    func testWithoutACredentialTheAppsAuthorizationGoesOnAndABodyOfUnknownLengthHasNoLength() throws {
        let head = try parse("POST /s HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer app\r\nTransfer-Encoding: chunked\r\n\r\n")
        let h2 = RequestRewriter.http2Head(for: head, decision: decision(credential: nil), token: nil, scheme: "http")
        XCTAssertEqual(pairs(h2), ["Authorization: Bearer app", "via: 1.1 token-sidecar", "te: trailers"])
        XCTAssertEqual(UpstreamRequestPlan(head: head, decision: decision(credential: nil), token: nil, upgrade: nil, trace: nil, via: .http1_1).http2Body,
                       .chunked, "the exchange writes it as chunks, de-framed on the stream")
    }

    /// An HTTP/2 app's request says so in its `via` entry (RFC 9110 §7.6.3).
    func testViaNamesTheProtocolTheRequestCameIn() throws {
        let head = try parse("GET /g HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let h2 = RequestRewriter.http2Head(for: head, decision: decision(credential: nil), token: nil, scheme: "http", via: .http2)
        XCTAssertEqual(pairs(h2), ["via: 2 token-sidecar", "te: trailers"])
    }

    /// The typed head carries what the text head carries, field for field (but the fields HTTP/2
    /// has in pseudo-headers or not at all), for the same rewrite.
    func testTheTypedHeadAndTheTextHeadCarryTheSameFields() throws {
        let head = try parse("GET /a HTTP/1.1\r\nHost: api.test\r\nX-One: 1\r\nCookie: a=1; b=2\r\nAuthorization: Bearer evil\r\n"
                             + "Connection: X-Two\r\nX-Two: 2\r\nX-Three:  3 \r\n\r\n")
        let routed = decision(credential: StaticCredential(name: "api", token: "t"))
        let text = String(decoding: RequestRewriter.head(for: head, decision: routed, token: AccessToken(value: "t")), as: UTF8.self)
        let textFields = text.components(separatedBy: "\r\n").dropFirst(2).filter { !$0.isEmpty }
            .map { line -> String in
                let parts = line.split(separator: ":", maxSplits: 1)
                return "\(parts[0].lowercased()): \(parts[1].trimmingCharacters(in: .whitespaces))"
            }
        let typed = RequestRewriter.http2Head(for: head, decision: routed, token: AccessToken(value: "t"), scheme: "http").fields
            .map { "\($0.name.lowercased()): \($0.value)" }
        XCTAssertEqual(typed, textFields + ["te: trailers"])
    }
}
