import Config
import Foundation
import HTTP1
import HTTP2
import TokenManager
import XCTest
@testable import Proxy

/// Every placement and placeholder rule of ``CredentialEdit``, as the upstream sees the head
/// (through ``RequestRewriter``, HTTP/1.1 text and the HTTP/2 typed head alike).
final class CredentialEditTests: XCTestCase {
    private let placeholder = "tsp_placeholderForTests01"
    private let secret = "sk-real/key+1"

    private func parse(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private func decision(_ placement: CredentialPlacement?, swapping: Bool = false) -> RouteDecision {
        let base = RouteDecision(target: UpstreamTarget(host: "backend", port: 8080, tls: nil, poolKey: "backend|8080", allowsLinkLocal: false),
                                 hostField: "backend:8080", credential: StaticCredential(name: "api", token: secret), routeName: "api.test:80",
                                 injection: placement.map { CredentialInjection(placement: $0) })
        return swapping ? base.swapping(placeholder: Array(placeholder.utf8)) : base
    }

    /// The HTTP/1.1 head the upstream gets.
    private func text(_ head: RequestHead, _ decision: RouteDecision) -> String {
        String(decoding: RequestRewriter.head(for: head, decision: decision, token: AccessToken(value: secret)), as: UTF8.self)
    }

    /// The HTTP/2 head's fields, `name: value` each.
    private func http2(_ head: RequestHead, _ decision: RouteDecision) -> [String] {
        let typed = RequestRewriter.http2Head(for: head, decision: decision, token: AccessToken(value: secret), scheme: "https")
        return typed.fields.map { "\($0.name.lowercased()): \($0.value)" } + [":path \(typed.path ?? "")"]
    }

    func testAHeaderPlacementReplacesTheAppsOwnValueAndKeepsItsAuthorization() throws {
        let head = try parse("GET /v1/messages HTTP/1.1\r\nHost: api.test\r\nX-Api-Key: app-own\r\nx-api-key: second\r\n"
                             + "Authorization: Bearer user-session\r\nAccept: */*\r\n\r\n")
        let out = text(head, decision(.header(name: "x-api-key", prefix: "", suffix: "")))
        XCTAssertEqual(out, "GET /v1/messages HTTP/1.1\r\nHost: backend:8080\r\nAuthorization: Bearer user-session\r\nAccept: */*\r\n"
                       + "x-api-key: \(secret)\r\nVia: 1.1 token-sidecar\r\n\r\n")
        XCTAssertFalse(out.contains("app-own") || out.contains("second"))
        let fields = http2(head, decision(.header(name: "x-api-key", prefix: "", suffix: "")))
        XCTAssertEqual(fields.filter { $0.hasPrefix("x-api-key") }, ["x-api-key: \(secret)"])
        XCTAssertTrue(fields.contains("authorization: Bearer user-session"))
    }

    func testAFormatPutsTextAroundTheTokenAndAnAuthorizationFormatDropsTheAppsAuthorizationAndDPoP() throws {
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: token app\r\nDPoP: proof\r\n\r\n")
        let out = text(head, decision(.header(name: "Authorization", prefix: "token ", suffix: "")))
        XCTAssertEqual(out, "GET / HTTP/1.1\r\nHost: backend:8080\r\nAuthorization: token \(secret)\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    func testAQueryPlacementReplacesTheAppsParameterAndIsPercentEncoded() throws {
        let head = try parse("GET /maps?q=a%20b&key=app-own&KEY=other&key HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let out = text(head, decision(.query(name: "key")))
        XCTAssertTrue(out.hasPrefix("GET /maps?q=a%20b&KEY=other&key=sk-real%2Fkey%2B1 HTTP/1.1\r\n"), out)
        XCTAssertEqual(http2(head, decision(.query(name: "key"))).last, ":path /maps?q=a%20b&KEY=other&key=sk-real%2Fkey%2B1")
        let bare = try parse("GET /maps HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(text(bare, decision(.query(name: "key"))).hasPrefix("GET /maps?key=sk-real%2Fkey%2B1 HTTP/1.1\r\n"))
        let absolute = try parse("GET http://api.test/maps?key=x HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(text(absolute, decision(.query(name: "key"))).hasPrefix("GET /maps?key=sk-real%2Fkey%2B1 HTTP/1.1\r\n"))
    }

    func testBasicPlacementsEncodeTheTokenAsUserOrPasswordOrPair() throws {
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Basic YXBwOm93bg==\r\n\r\n")
        func basic(_ form: BasicCredentialForm) -> String {
            let out = text(head, decision(.basic(form)))
            let line = out.split(separator: "\r\n").first { $0.hasPrefix("Authorization: Basic ") }!
            return String(decoding: Base64.decodeURL(line.dropFirst("Authorization: Basic ".count))!, as: UTF8.self)
        }
        XCTAssertEqual(basic(.tokenAsUsername(password: "")), "\(secret):")
        XCTAssertEqual(basic(.tokenAsPassword(username: "api")), "api:\(secret)")
        XCTAssertEqual(basic(.pair), secret)
        XCTAssertEqual(text(head, decision(.basic(.pair))).components(separatedBy: "Authorization").count, 2, "exactly one Authorization")
    }

    func testWithoutAPlacementThePlaceholderIsSwappedWhereTheAppPutItAndNothingElseIsAdded() throws {
        let head = try parse("POST /v1/messages?beta=\(placeholder) HTTP/1.1\r\nHost: api.test\r\nx-api-key: \(placeholder)\r\n"
                             + "Authorization: Bearer other\r\nContent-Length: 2\r\n\r\n")
        let out = text(head, decision(nil, swapping: true))
        XCTAssertEqual(out, "POST /v1/messages?beta=sk-real%2Fkey%2B1 HTTP/1.1\r\nHost: backend:8080\r\nx-api-key: \(secret)\r\n"
                       + "Content-Length: 2\r\nVia: 1.1 token-sidecar\r\n\r\n")
        let bearer = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer \(placeholder)\r\n\r\n")
        XCTAssertEqual(text(bearer, decision(nil, swapping: true)),
                       "GET / HTTP/1.1\r\nHost: backend:8080\r\nAuthorization: Bearer \(secret)\r\nVia: 1.1 token-sidecar\r\n\r\n")
        XCTAssertEqual(http2(bearer, decision(nil, swapping: true)).filter { $0.hasPrefix("authorization") },
                       ["authorization: Bearer \(secret)"])
    }

    func testAPlaceholderInsideABasicPairIsDecodedSwappedAndEncodedAgain() throws {
        let pair = Base64.encode(Array("\(placeholder):".utf8))
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: basic \(pair)\r\n\r\n")
        let out = text(head, decision(nil, swapping: true))
        XCTAssertTrue(out.contains("Authorization: Basic \(Base64.encode(Array("\(secret):".utf8)))\r\n"), out)
        XCTAssertFalse(out.contains(pair))
    }

    func testWithAPlacementThePlaceholderElsewhereIsRemovedSoTheSecretGoesOnce() throws {
        let head = try parse("GET /x?other=\(placeholder)&a=1 HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer \(placeholder)\r\n"
                             + "X-Goog-Api-Key: \(placeholder)\r\n\r\n")
        let out = text(head, decision(.header(name: "x-api-key", prefix: "", suffix: ""), swapping: true))
        XCTAssertEqual(out, "GET /x?a=1 HTTP/1.1\r\nHost: backend:8080\r\nx-api-key: \(secret)\r\nVia: 1.1 token-sidecar\r\n\r\n")
        XCTAssertEqual(out.components(separatedBy: secret).count, 2)
        XCTAssertFalse(out.contains(placeholder))
    }

    func testTheEditKeepsHopByHopRulesAndConnectionCounting() throws {
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nx-api-key: a\r\n\r\n")
        let edited = CredentialEdit.apply(head, CredentialInjection(placement: .header(name: "x-api-key", prefix: "", suffix: "")),
                                          token: "t")
        XCTAssertTrue(edited.hasConnectionField)
        let out = text(head, decision(.header(name: "x-api-key", prefix: "", suffix: "")))
        XCTAssertFalse(out.contains("X-Hop") || out.contains("Connection"), out)
        XCTAssertEqual(edited.host, head.host)
        XCTAssertEqual(edited.method, "GET")
    }

    func testAPathWithoutTheParameterOrPlaceholderIsLeftAsItIs() {
        let bytes = Array(placeholder.utf8)
        XCTAssertEqual(CredentialEdit.editedPath("/a?b=c", injection: CredentialInjection(placement: nil, placeholder: bytes), token: "t"), "/a?b=c")
        XCTAssertEqual(CredentialEdit.editedPath("/a?key=\(placeholder)", injection: CredentialInjection(placement: .query(name: "key"),
                                                                                                         placeholder: bytes), token: "t"), "/a?key=t")
        XCTAssertEqual(CredentialEdit.editedPath("/a?x=\(placeholder)", injection: CredentialInjection(
            placement: .header(name: "h", prefix: "", suffix: ""), placeholder: bytes), token: "t"), "/a")
        XCTAssertEqual(CredentialEdit.editedPath("/a?x=1&y=\(placeholder)x", injection: CredentialInjection(placement: nil, placeholder: bytes),
                                                 token: "t t"), "/a?x=1&y=t+tx", "swapped inside a value, encoded")
    }

    func testANameWithAnUnderscoreIsMatchedWithoutFoldingItIntoAnotherByte() throws {
        let head = try parse("GET / HTTP/1.1\r\nHost: api.test\r\nAPI_Key: app-own\r\nX-Other: 1\r\n\r\n")
        let out = text(head, decision(.header(name: "api_key", prefix: "", suffix: "")))
        XCTAssertEqual(out, "GET / HTTP/1.1\r\nHost: backend:8080\r\nX-Other: 1\r\napi_key: \(secret)\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }
}
