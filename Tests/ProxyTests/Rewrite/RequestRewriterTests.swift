import Foundation
import HTTP1
import TokenManager
import XCTest
@testable import Proxy

final class RequestRewriterTests: XCTestCase {
    private func parse(_ text: String) throws -> RequestHead {
        try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
    }

    private func decision(credential: (any Credential)?, hostField: String = "backend:8080") -> RouteDecision {
        RouteDecision(target: UpstreamTarget(host: "backend", port: 8080, tls: nil, poolKey: "backend|8080", allowsLinkLocal: false),
                      hostField: hostField, credential: credential, routeName: "api.test:80")
    }

    func testInjectsExactlyOneTokenAfterRemovingClientAuthorizationAndHopByHop() throws {
        let head = try parse("""
        GET http://api.test/x?y=1 HTTP/1.1\r
        Host: api.test\r
        Authorization: Bearer evil\r
        authorization: Basic c2VjcmV0\r
        Connection: close, Authorization, X-Hop\r
        X-Hop: 1\r
        Keep-Alive: timeout=5\r
        Proxy-Connection: keep-alive\r
        Proxy-Authorization: Basic eA==\r
        TE: trailers\r
        Upgrade: websocket\r
        Accept: */*\r
        \r

        """)
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "abc")),
                                                        token: AccessToken(value: "abc")), as: UTF8.self)
        XCTAssertEqual(out, "GET /x?y=1 HTTP/1.1\r\nHost: backend:8080\r\nAccept: */*\r\nAuthorization: Bearer abc\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    /// Kept lines go as the client sent them (spacing included), in runs around the dropped ones
    /// at the start, between and at the end of the section; a head built from fields the same.
    /// An upgrade says `Upgrade: <the protocol chosen>` and `Connection: upgrade`; nothing else
    /// of the app's Upgrade lines (a list could name a protocol the route does not allow), no
    /// other hop-by-hop field, and the token is still the only Authorization.
    func testAnUpgradeSaysOnlyItsChosenProtocol() throws {
        let head = try parse("GET /ws HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade, X-Hop\r\nX-Hop: 1\r\n"
                             + "Upgrade: websocket, h2c\r\nSec-WebSocket-Key: k\r\nKeep-Alive: 5\r\nUpgrade: h2c\r\n"
                             + "Authorization: Bearer evil\r\n\r\n")
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "t")),
                                                        token: AccessToken(value: "t"), upgrade: "websocket"), as: UTF8.self)
        XCTAssertEqual(out, "GET /ws HTTP/1.1\r\nHost: backend:8080\r\nSec-WebSocket-Key: k\r\n"
                       + "Authorization: Bearer t\r\nUpgrade: websocket\r\nConnection: upgrade\r\nVia: 1.1 token-sidecar\r\n\r\n")
        let plain = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: nil), token: nil), as: UTF8.self)
        XCTAssertFalse(plain.contains("Upgrade") || plain.contains("Connection"), plain)
    }

    func testKeptLinesGoAsTheClientSentThem() throws {
        let head = try parse("GET / HTTP/1.1\r\nProxy-Connection: keep-alive\r\nX-A:tight\r\nHost: api.test\r\n"
                             + "X-B:  spaced \t\r\nX-C: c\r\nAuthorization: Bearer app\r\nContent-Length: 0\r\n\r\n")
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "t")),
                                                        token: AccessToken(value: "t")), as: UTF8.self)
        XCTAssertEqual(out, "GET / HTTP/1.1\r\nHost: backend:8080\r\nX-A:tight\r\nX-B:  spaced \t\r\nX-C: c\r\n"
                       + "Content-Length: 0\r\nAuthorization: Bearer t\r\nVia: 1.1 token-sidecar\r\n\r\n")
        let built = RequestHead(method: "GET", target: .origin("/b"), version: .http1_1,
                                fields: HTTPFields([HTTPField(name: "Host", value: "api.test"), HTTPField(name: "X-Kept", value: "1"),
                                                    HTTPField(name: "Connection", value: "x-gone"), HTTPField(name: "X-Gone", value: "2")]),
                                framing: .none, host: Authority(host: "api.test", port: nil), keepAlive: true, expectsContinue: false)
        XCTAssertEqual(String(decoding: RequestRewriter.head(for: built, decision: decision(credential: nil), token: nil), as: UTF8.self),
                       "GET /b HTTP/1.1\r\nHost: backend:8080\r\nX-Kept: 1\r\nVia: 1.1 token-sidecar\r\n\r\n")
        XCTAssertEqual(built.fields.first("x-gone"), "2")
    }

    /// The size computed for a request head bounds what is written, whatever the framing: the
    /// largest Content-Length and a long field section included.
    func testARequestHeadNeverOutgrowsItsReservation() throws {
        let fields = (0..<50).map { "X-Field-\($0): \(String(repeating: "v", count: $0))\r\n" }.joined()
        let text = "PUT http://api.test/\(String(repeating: "p", count: 300)) HTTP/1.1\r\nHost: api.test\r\n\(fields)"
            + "Content-Length: 9223372036854775807\r\n\r\n"
        let head = try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }
        let decision = RouteDecision(target: UpstreamTarget(host: "b", port: 1, tls: nil, poolKey: "b", allowsLinkLocal: false),
                                     hostField: String(repeating: "h", count: 200), credential: nil, routeName: nil)
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision, token: nil), as: UTF8.self)
        XCTAssertTrue(out.hasSuffix("Content-Length: 9223372036854775807\r\nVia: 1.1 token-sidecar\r\n\r\n"))
        XCTAssertTrue(out.contains("X-Field-49: \(String(repeating: "v", count: 49))\r\n"))
    }

    func testRoutesWithoutCredentialKeepClientAuthorization() throws {
        let head = try parse("POST /u HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer mine\r\nContent-Length: 3\r\n\r\n")
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: nil, hostField: "other.test"), token: nil), as: UTF8.self)
        XCTAssertEqual(out, "POST /u HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer mine\r\nContent-Length: 3\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    func testChunkedBodyIsReframedAsChunkedAndHTTP10BecomesHTTP11() throws {
        let head = try parse("POST /c HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip-not-allowed-here\r\n\r\n".replacingOccurrences(of: "gzip-not-allowed-here", with: "chunked"))
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: nil), token: nil), as: UTF8.self)
        XCTAssertTrue(out.contains("Transfer-Encoding: chunked\r\n"))
        let old = try parse("GET /o HTTP/1.0\r\n\r\n")
        XCTAssertTrue(String(decoding: RequestRewriter.head(for: old, decision: decision(credential: nil), token: nil), as: UTF8.self)
            .hasPrefix("GET /o HTTP/1.1\r\nHost: backend:8080\r\n"))
    }

    /// The payload of a compact JWS, decoded.
    private func claims(_ jws: Substring) throws -> [String: Any] {
        var text = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try XCTUnwrap(JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: text))) as? [String: Any])
    }

    func testADPoPTokenGetsAFreshProofForTheUpstreamURIAndTheAppsOwnProofIsDropped() throws {
        let head = try parse("POST http://api.test/pay/1?amount=5 HTTP/1.1\r\nHost: api.test\r\nDPoP: the-apps-own\r\ndpop: another\r\nContent-Length: 0\r\n\r\n")
        let nonces = DPoPNonces()
        nonces.remember("n-42", for: "http://backend:8080")
        let token = AccessToken(value: "tok", binding: TokenBinding(dpopKey: try DPoPKey.generated(), nonces: nonces))
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "tok")),
                                                        token: token), as: UTF8.self)
        let lines = out.components(separatedBy: "\r\n")
        XCTAssertTrue(lines.contains("Authorization: DPoP tok"))
        let proofs = lines.filter { $0.lowercased().hasPrefix("dpop:") }
        XCTAssertEqual(proofs.count, 1, "only the sidecar's proof goes upstream: \(out)")
        let payload = try claims(try XCTUnwrap(proofs.first).dropFirst(6))
        XCTAssertEqual(payload["htm"] as? String, "POST")
        XCTAssertEqual(payload["htu"] as? String, "http://backend:8080/pay/1", "the URI the upstream receives, without query")
        XCTAssertEqual(payload["nonce"] as? String, "n-42", "the origin's nonce")
        XCTAssertNotNil(payload["ath"])

        let bearer = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "tok")),
                                                           token: AccessToken(value: "tok")), as: UTF8.self)
        XCTAssertFalse(bearer.lowercased().contains("dpop:"),
                       "the app's proof went with the app's token: not next to an injected bearer token either")
        let untouched = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: nil), token: nil), as: UTF8.self)
        XCTAssertTrue(untouched.contains("DPoP: the-apps-own"), "a route without a credential leaves the app's headers alone")
    }

    func testAProofForAnAsteriskRequestNamesTheOrigin() throws {
        let head = try parse("OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let token = AccessToken(value: "tok", binding: TokenBinding(dpopKey: try DPoPKey.generated(), nonces: DPoPNonces()))
        let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: StaticCredential(name: "api", token: "tok")),
                                                        token: token), as: UTF8.self)
        let proof = try XCTUnwrap(out.components(separatedBy: "\r\n").first { $0.hasPrefix("DPoP: ") })
        XCTAssertEqual(try claims(proof.dropFirst(6))["htu"] as? String, "http://backend:8080")
    }

    /// `Via` names the protocol the request came in: the text head says what it is given.
    func testViaNamesTheProtocolTheRequestCameIn() throws {
        let head = try parse("GET /v HTTP/1.0\r\nHost: api.test\r\n\r\n")
        for (via, line) in [(ViaProtocol.http1_0, "Via: 1.0 token-sidecar"), (.http1_1, "Via: 1.1 token-sidecar"),
                            (.http2, "Via: 2 token-sidecar")] {
            let out = String(decoding: RequestRewriter.head(for: head, decision: decision(credential: nil), token: nil, via: via),
                             as: UTF8.self)
            XCTAssertEqual(out, "GET /v HTTP/1.1\r\nHost: backend:8080\r\n\(line)\r\n\r\n")
        }
    }
}

final class ResponseRewriterTests: XCTestCase {
    /// Parses `text` as a backend's head and keeps what a client of `clientVersion` gets.
    private func response(_ text: String, method: String = "GET", clientVersion: HTTPVersion) throws -> UpstreamResponse {
        try Array(text.utf8).withUnsafeBytes { bytes throws(HTTPParseError) in
            ResponseRewriter.response(try ResponseHeadParser.view(bytes, requestMethod: method), clientVersion: clientVersion)
        }
    }

    private func head(_ response: UpstreamResponse, clientVersion: HTTPVersion, keepAlive: Bool) -> String {
        var response = response
        return String(decoding: ResponseRewriter.head(for: &response, clientVersion: clientVersion, keepAlive: keepAlive),
                      as: UTF8.self)
    }

    func testHopByHopRemovedAndFramingChosenPerClientVersion() throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=1\r\nX-Keep: yes\r\n\r\n"
        let modern = try response(text, clientVersion: .http1_1)
        XCTAssertEqual(modern.clientFraming, .chunked)
        XCTAssertEqual(head(modern, clientVersion: .http1_1, keepAlive: true),
                       "HTTP/1.1 200 OK\r\nX-Keep: yes\r\nTransfer-Encoding: chunked\r\nVia: 1.1 token-sidecar\r\n\r\n")
        let old = try response(text, clientVersion: .http1_0)
        XCTAssertEqual(old.clientFraming, .close)
        XCTAssertEqual(head(old, clientVersion: .http1_0, keepAlive: false),
                       "HTTP/1.1 200 OK\r\nX-Keep: yes\r\nConnection: close\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    func testCloseDelimitedBecomesChunkedForHTTP11AndKeepAliveAnnouncedToHTTP10() throws {
        let closeDelimited = try response("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", clientVersion: .http1_1)
        XCTAssertEqual(closeDelimited.framing, .untilClose)
        XCTAssertEqual(closeDelimited.clientFraming, .chunked)
        let cl = try response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", clientVersion: .http1_0)
        let out = head(cl, clientVersion: .http1_0, keepAlive: true)
        XCTAssertTrue(out.contains("Content-Length: 2\r\n"))
        XCTAssertTrue(out.contains("Connection: keep-alive\r\n"))
    }

    /// Names are matched ignoring case, and a line named by a Connection option goes even when
    /// the option's case differs; other codings than chunked stay, in order.
    func testFieldNamesMatchIgnoringCaseAndOtherCodingsStay() throws {
        let text = "HTTP/1.1 200 Fine\r\nCONNECTION: x-hop, Keep-Alive\r\nX-HOP: 1\r\ntE: trailers\r\nTransfer-Encoding: gzip, chunked\r\n"
            + "content-length-ish: 3\r\nx-Kept: a b\r\n\r\n"
        let kept = try response(text, clientVersion: .http1_1)
        XCTAssertEqual(kept.otherCodings, ["gzip"])
        XCTAssertEqual(head(kept, clientVersion: .http1_1, keepAlive: true),
                       "HTTP/1.1 200 Fine\r\ncontent-length-ish: 3\r\nx-Kept: a b\r\nTransfer-Encoding: gzip, chunked\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    /// Kept lines go as they arrived (their own spacing), in runs around dropped lines at the
    /// start, middle and end; an HTTP/1.0 status line or one without a reason is rewritten (and
    /// `Via` says the response came in HTTP/1.0).
    func testKeptLinesGoAsTheyArrivedAroundDroppedOnes() throws {
        let text = "HTTP/1.0 204\r\nKeep-Alive: 5\r\nX-A:tight\r\nX-B:   spaced  \r\nUpgrade: h2c\r\nX-C: c\r\n"
            + "X-D: d\r\nTE: trailers\r\n\r\n"
        let kept = try response(text, clientVersion: .http1_1)
        XCTAssertEqual(head(kept, clientVersion: .http1_1, keepAlive: false),
                       "HTTP/1.1 204 \r\nX-A:tight\r\nX-B:   spaced  \r\nX-C: c\r\nX-D: d\r\nConnection: close\r\n"
                       + "Via: 1.0 token-sidecar\r\n\r\n")
        let none = try response("HTTP/1.1 404 Not  Found\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                                clientVersion: .http1_1)
        XCTAssertEqual(head(none, clientVersion: .http1_1, keepAlive: true),
                       "HTTP/1.1 404 Not  Found\r\nContent-Length: 0\r\nVia: 1.1 token-sidecar\r\n\r\n")
    }

    func testLocatedLinesPointAtEachKeptNameAndValueInTheCopy() throws {
        // (What an HTTP/2 app's stream gets: the kept lines as fields, without text around them.)
        let text = "HTTP/1.1 200 OK\r\nKeep-Alive: 5\r\nX-A:tight\r\nX-B:   spaced  \r\nConnection: X-Hop\r\nX-Hop: 1\r\n"
            + "X-C: c\r\nTransfer-Encoding: chunked\r\n\r\n"
        let kept = try Array(text.utf8).withUnsafeBytes { bytes throws(HTTPParseError) in
            let view = try ResponseHeadParser.view(bytes, requestMethod: "GET")
            var response = ResponseRewriter.response(view, clientVersion: .http1_1)
            // (Into storage a head done with gave back: what it held does not show.)
            ResponseRewriter.locateKeptLines(of: view, in: &response, reusing: [FieldLine(name: 0..<1, value: 2..<3)])
            return response
        }
        let located = kept.keptLines.map { line in
            String(decoding: kept.forwardedLines[line.name], as: UTF8.self) + "=" + String(decoding: kept.forwardedLines[line.value], as: UTF8.self)
        }
        XCTAssertEqual(located, ["X-A=tight", "X-B=spaced", "X-C=c"])
        // A status line without a reason phrase: the lines start right after it.
        let noReason = try Array("HTTP/1.1 204\r\nX-A: a\r\nConnection: close\r\nX-B: b\r\n\r\n".utf8).withUnsafeBytes { bytes throws(HTTPParseError) in
            let view = try ResponseHeadParser.view(bytes, requestMethod: "GET")
            var response = ResponseRewriter.response(view, clientVersion: .http1_1)
            ResponseRewriter.locateKeptLines(of: view, in: &response)
            return response
        }
        XCTAssertEqual(noReason.keptLines.map { String(decoding: noReason.forwardedLines[$0.name], as: UTF8.self) + "="
            + String(decoding: noReason.forwardedLines[$0.value], as: UTF8.self) }, ["X-A=a", "X-B=b"])
        XCTAssertTrue(try response(text, clientVersion: .http1_1).keptLines.isEmpty, "located only when asked for")
    }
}
