import Foundation
import HTTP1
import HTTP2
import TokenManager
import XCTest
@testable import Proxy

/// A response head from an HTTP/2 upstream's stream, kept from its fields as an HTTP/1.1 one
/// is: every rule of the check, accepted and refused, and the head the exchange gets held to
/// what the old way (the fields written as HTTP/1.1 text and parsed back) made of the same.
final class ResponseRewriterHTTP2Tests: XCTestCase {
    private func head(_ status: Int?, _ fields: [(String, String)]) -> HTTP2Head {
        var head = HTTP2Head(status: status ?? 200, fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
        head.status = status
        return head
    }

    private func kept(_ status: Int, _ fields: [(String, String)], endStream: Bool = false, method: String = "GET",
                      version: HTTPVersion = .http1_1, locate: Bool = true) throws -> UpstreamResponse {
        let h = head(status, fields)
        return try ResponseRewriter.response(http2: h, status: ResponseRewriter.status(ofHTTP2: h), endStream: endStream,
                                             requestMethod: method, clientVersion: version, locateLines: locate)
    }

    private func text(_ response: UpstreamResponse) -> String { String(decoding: response.forwardedLines, as: UTF8.self) }

    /// The kept lines, read back through their offsets.
    private func lines(_ response: UpstreamResponse) -> [String] {
        response.keptLines.map {
            String(decoding: response.forwardedLines[$0.name], as: UTF8.self) + ": " + String(decoding: response.forwardedLines[$0.value], as: UTF8.self)
        }
    }

    func testTheStatusIsFrom100To599AndNot101() {
        for status in [100, 103, 200, 204, 404, 599] {
            XCTAssertEqual(try ResponseRewriter.status(ofHTTP2: head(status, [])), status)
        }
        for status in [nil, 0, 99, 101, 600, 999] {
            XCTAssertThrowsError(try ResponseRewriter.status(ofHTTP2: head(status, []))) { error in
                XCTAssertEqual(error as? ResponseRewriter.HTTP2HeadProblem, .status, "\(String(describing: status))")
            }
        }
    }

    func testAHeadOverTheFieldOrByteLimitIsRefused() {
        let many = (0...ResponseRewriter.maxFields).map { ("x-f\($0)", "v") }
        XCTAssertThrowsError(try ResponseRewriter.status(ofHTTP2: head(200, many))) { XCTAssertEqual($0 as? ResponseRewriter.HTTP2HeadProblem, .tooLarge) }
        XCTAssertNoThrow(try ResponseRewriter.status(ofHTTP2: head(200, Array(many.dropLast()))))
        let big = [("x-big", String(repeating: "a", count: HeadLimits.responseHead))]
        XCTAssertThrowsError(try ResponseRewriter.status(ofHTTP2: head(200, big))) { XCTAssertEqual($0 as? ResponseRewriter.HTTP2HeadProblem, .tooLarge) }
    }

    func testTheBodyIsFramedByItsLengthItsStreamOrNothing() throws {
        XCTAssertEqual(try kept(200, [("content-length", "12")]).framing, .contentLength(12))
        let unknown = try kept(200, [("content-type", "application/grpc")])
        XCTAssertEqual(unknown.framing, .chunked, "a body without a length ends with the stream")
        XCTAssertEqual(unknown.clientFraming, .chunked)
        XCTAssertEqual(try kept(200, [], version: .http1_0).clientFraming, .close)
        let ended = try kept(200, [("grpc-status", "16")], endStream: true)
        XCTAssertEqual(ended.framing, .contentLength(0))
        XCTAssertEqual(lines(ended), ["grpc-status: 16", "content-length: 0"], "the app is told the body is empty")
        XCTAssertEqual(try kept(200, [("content-length", "5")], method: "HEAD").framing, .none)
        XCTAssertEqual(try kept(204, []).framing, .none)
        XCTAssertEqual(try kept(304, [("content-length", "5")]).framing, .none)
        XCTAssertThrowsError(try kept(200, [("content-length", "5x")])) { XCTAssertEqual($0 as? ResponseRewriter.HTTP2HeadProblem, .contentLength) }
    }

    func testHopByHopFieldsStayAndTheLinesAreLocatedInTheirCopy() throws {
        let response = try kept(404, [("content-type", "text/plain"), ("te", "trailers"), ("trailer", "x-sum"),
                                      ("set-cookie", "a=1"), ("set-cookie", "b=2"), ("content-length", "3")])
        XCTAssertEqual(text(response), "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\nset-cookie: b=2\r\ncontent-length: 3\r\n")
        XCTAssertEqual(lines(response), ["content-type: text/plain", "set-cookie: a=1", "set-cookie: b=2", "content-length: 3"])
        XCTAssertTrue(response.keepAlive)
        XCTAssertTrue(try kept(200, [("a", "b")], locate: false).keptLines.isEmpty, "located only when asked")
    }

    /// A response that came over HTTP/2 says so in the `Via` an HTTP/1.1 client gets.
    func testViaSaysTheResponseCameInHTTP2() throws {
        var response = try kept(200, [("content-length", "0")], locate: false)
        let head = String(decoding: ResponseRewriter.head(for: &response, clientVersion: .http1_1, keepAlive: true), as: UTF8.self)
        XCTAssertEqual(head, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nVia: 2 token-sidecar\r\n\r\n")
    }

    func testGRPCUnauthenticatedIsATrailersOnlyStatus16() {
        XCTAssertTrue(ResponseRewriter.isGRPCUnauthenticated(http2: head(200, [("grpc-status", "16")]), status: 200, endStream: true))
        XCTAssertFalse(ResponseRewriter.isGRPCUnauthenticated(http2: head(200, [("grpc-status", "16")]), status: 200, endStream: false))
        XCTAssertFalse(ResponseRewriter.isGRPCUnauthenticated(http2: head(200, [("grpc-status", "0")]), status: 200, endStream: true))
    }

    func testGRPCUnauthenticatedTrailersAreTheFirstStatusLineSaying16() {
        func unauthenticated(_ fields: [(String, String)]) -> Bool {
            ResponseRewriter.isGRPCUnauthenticated(http2Trailers: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
        }
        XCTAssertTrue(unauthenticated([("grpc-status", "16"), ("grpc-message", "bad token")]))
        XCTAssertTrue(unauthenticated([("grpc-message", "bad token"), ("grpc-status", "16")]), "wherever it stands")
        XCTAssertFalse(unauthenticated([("grpc-status", "0")]))
        XCTAssertFalse(unauthenticated([("grpc-status", "160")]))
        XCTAssertFalse(unauthenticated([("grpc-status", "1")]))
        XCTAssertFalse(unauthenticated([("grpc-status", "0"), ("grpc-status", "16")]), "the first status counts")
        XCTAssertFalse(unauthenticated([("grpc-message", "16"), ("x-grpc-status", "16")]))
        XCTAssertFalse(unauthenticated([]))
    }

    func testADPoPNonceIsRememberedAndAChallengeSeen() {
        let nonces = DPoPNonces()
        let challenge = head(401, [("www-authenticate", #"DPoP error="use_dpop_nonce""#), ("dpop-nonce", "n-1")])
        XCTAssertTrue(ResponseRewriter.readDPoP(http2: challenge, status: 401, nonces: nonces, origin: "https://api.test"))
        XCTAssertEqual(nonces.nonce(for: "https://api.test"), "n-1")
        XCTAssertFalse(ResponseRewriter.readDPoP(http2: head(200, [("dpop-nonce", "n-2")]), status: 200, nonces: nonces, origin: "https://api.test"))
        XCTAssertEqual(nonces.nonce(for: "https://api.test"), "n-2")
    }

    /// The old way: the head written as HTTP/1.1 text (as the upstream stream did) and parsed.
    private func oldWay(_ status: Int, _ fields: [(String, String)], endStream: Bool, method: String,
                        version: HTTPVersion) throws -> UpstreamResponse {
        var text = "HTTP/1.1 \(status) \(HeadSerializer.reasonPhrase(status))\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        if !ResponseHeadParser.hasNoContent(status: status, requestMethod: method) && !fields.contains(where: { $0.0 == "content-length" }) {
            text += endStream ? "content-length: 0\r\n" : "transfer-encoding: chunked\r\n"
        }
        text += "\r\n"
        return try Array(text.utf8).withUnsafeBytes { bytes in
            let view = try ResponseHeadParser.view(bytes, requestMethod: method)
            var response = ResponseRewriter.response(view, clientVersion: version)
            ResponseRewriter.locateKeptLines(of: view, in: &response)
            return response
        }
    }

    func testRandomHeadsAreKeptAsTheTextRoundTripKeptThem() throws {
        var random = SystemRandomNumberGenerator()
        let names = ["content-type", "x-request-id", "set-cookie", "cache-control", "grpc-status", "grpc-message", "te", "trailer",
                     "content-length", "vary", "x-a"]
        for round in 0..<500 {
            let status = [200, 201, 204, 206, 301, 304, 401, 404, 500, 503].randomElement(using: &random)!
            var fields: [(String, String)] = []
            var hasLength = false
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                let name = names.randomElement(using: &random)!
                if name == "content-length" {
                    if hasLength { continue }
                    hasLength = true
                    fields.append((name, String(Int.random(in: 0...100_000, using: &random))))
                } else {
                    fields.append((name, String((0..<Int.random(in: 0...12, using: &random)).map { _ in "abc =/,;0".randomElement(using: &random)! })
                        .trimmingCharacters(in: .whitespaces)))
                }
            }
            let endStream = Bool.random(using: &random), method = Bool.random(using: &random) ? "GET" : "HEAD"
            let version: HTTPVersion = Bool.random(using: &random) ? .http1_1 : .http1_0
            let new = try kept(status, fields, endStream: endStream, method: method, version: version)
            let old = try oldWay(status, fields, endStream: endStream, method: method, version: version)
            let context = "round \(round): \(status) \(fields) end \(endStream) \(method) \(version)"
            XCTAssertEqual(new.status, old.status, context)
            XCTAssertEqual(new.clientFraming, old.clientFraming, context)
            XCTAssertEqual(new.keepAlive, old.keepAlive, context)
            XCTAssertEqual(lines(new), lines(old), context)
            XCTAssertEqual(text(new).prefix(while: { $0 != "\r\n" }), text(old).prefix(while: { $0 != "\r\n" }), context)
            if new.framing != old.framing {
                // Only the name differs: the old text said chunked for a body ended by the stream.
                XCTAssertEqual([new.framing, old.framing], [.chunked, .chunked], context)
            }
        }
    }
}
