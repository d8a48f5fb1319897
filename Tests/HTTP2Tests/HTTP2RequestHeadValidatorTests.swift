import HTTP1
@testable import HTTP2
import HTTP2Fuzzing
import XCTest

/// HTTP/2 request heads checked and built into the heads the proxy serves, in one pass: every
/// rule of ``HTTP2RequestHeadValidator``, taken and refused.
final class HTTP2RequestHeadValidatorTests: XCTestCase {
    private func head(_ method: String = "GET", scheme: String? = "https", authority: String? = "api.test",
                      path: String? = "/p?q=1", fields: [(String, String)] = []) -> HTTP2Head {
        HTTP2Head(method: method, scheme: scheme, authority: authority, path: path,
                  fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
    }

    private func validate(_ head: HTTP2Head, endStream: Bool = true, headLimit: Int = 64 * 1024, maxFields: Int = 100,
                          reusing storage: RequestHeadStorage = RequestHeadStorage()) -> HTTP2RequestHeadValidator.Outcome {
        var last: ParsedHost?
        return HTTP2RequestHeadValidator.validate(head, endStream: endStream, headLimit: headLimit, maxFields: maxFields,
                                                  reusing: storage, lastHost: &last)
    }

    /// The head built, and how its body follows (fails the test when refused).
    private func built(_ head: HTTP2Head, endStream: Bool = true, file: StaticString = #filePath,
                       line: UInt = #line) throws -> (RequestHead, HTTP2RequestHeadValidator.Body) {
        guard case .head(let request, let body) = validate(head, endStream: endStream) else {
            XCTFail("refused: \(validate(head, endStream: endStream))", file: file, line: line)
            throw XCTSkip("refused")
        }
        return (request, body)
    }

    /// The error a head is refused with (nil when taken or malformed).
    private func refusal(_ head: HTTP2Head, headLimit: Int = 64 * 1024, maxFields: Int = 100) -> HTTPParseError? {
        if case .refused(let error) = validate(head, headLimit: headLimit, maxFields: maxFields) { return error }
        return nil
    }

    private func isMalformed(_ head: HTTP2Head, endStream: Bool = true) -> Bool {
        if case .malformed = validate(head, endStream: endStream) { return true }
        return false
    }

    private func lines(_ request: RequestHead) -> [String] { request.fields.map { "\($0.name): \($0.value)" } }

    func testABodylessGetIsAnOriginFormRequestThatClosesAfterItsResponse() throws {
        let (request, body) = try built(head(fields: [("accept", "*/*")]))
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.target, .origin("/p?q=1"))
        XCTAssertEqual(request.version, .http1_1)
        XCTAssertEqual(request.host, Authority(host: "api.test", port: nil))
        XCTAssertEqual(lines(request), ["Host: api.test", "accept: */*"])
        XCTAssertEqual(request.framing, .none)
        XCTAssertEqual(body, .none)
        XCTAssertFalse(request.keepAlive, "one exchange per stream")
    }

    func testAuthorityWinsOverHostAndTEIsDroppedAndCookiesAreJoined() throws {
        let (request, _) = try built(head(fields: [("host", "evil.test"), ("cookie", "a=1"), ("x-b", "2"), ("cookie", ""),
                                                   ("cookie", "c=3"), ("te", "trailers")]))
        XCTAssertEqual(lines(request), ["Host: api.test", "x-b: 2", "cookie: a=1; c=3"])
        XCTAssertEqual(request.host?.host, "api.test")
        let (crumbless, _) = try built(head(fields: [("cookie", ""), ("cookie", "")]))
        XCTAssertEqual(lines(crumbless), ["Host: api.test"], "only empty crumbs: no cookie line")
    }

    func testHostStandsInForAMissingAuthorityAndNoneIsMalformed() throws {
        let (request, _) = try built(head(authority: nil, fields: [("host", "h.test:8443")]))
        XCTAssertEqual(request.host, Authority(host: "h.test", port: 8443))
        XCTAssertEqual(lines(request), ["Host: h.test:8443"])
        XCTAssertTrue(isMalformed(head(authority: nil)))
        XCTAssertTrue(isMalformed(head(authority: "")))
    }

    func testBodiesAreFramedByTheirLengthOrStreamed() throws {
        let (sized, sizedBody) = try built(head("POST", fields: [("content-length", "5")]), endStream: false)
        XCTAssertEqual(sized.framing, .contentLength(5))
        XCTAssertEqual(sizedBody, .sized)
        XCTAssertEqual(lines(sized), ["Host: api.test", "content-length: 5"])
        let (streamed, streamedBody) = try built(head("POST"), endStream: false)
        XCTAssertEqual(streamed.framing, .chunked)
        XCTAssertEqual(streamedBody, .streamed)
        XCTAssertEqual(lines(streamed).last, "transfer-encoding: chunked")
        for method in ["POST", "PUT", "PATCH"] {
            let (empty, body) = try built(head(method))
            XCTAssertEqual(body, .none)
            XCTAssertEqual(empty.framing, .contentLength(0), "an HTTP/1.1 upstream does not wait for a body")
            XCTAssertEqual(lines(empty).last, "content-length: 0")
        }
        let (get, _) = try built(head("DELETE"))
        XCTAssertEqual(get.framing, .none)
        XCTAssertEqual(lines(get), ["Host: api.test"])
    }

    func testExpectAndAsteriskFormAreRead() throws {
        let (request, _) = try built(head("POST", fields: [("content-length", "5"), ("expect", "100-continue")]), endStream: false)
        XCTAssertTrue(request.expectsContinue)
        let (options, _) = try built(head("OPTIONS", path: "*"))
        XCTAssertEqual(options.target, .asterisk)
    }

    func testWhatHTTP1CannotExpressIsMalformed() {
        var websocket = head("CONNECT")
        websocket.extendedProtocol = "websocket"
        XCTAssertTrue(isMalformed(websocket, endStream: false), "an extended CONNECT (not offered)")
        XCTAssertTrue(isMalformed(HTTP2Head(method: "CONNECT", scheme: nil, authority: "db.test:5432", path: nil)))
        XCTAssertTrue(isMalformed(head(scheme: "ftp")), "a scheme other than http or https")
        XCTAssertTrue(isMalformed(head(scheme: nil)))
        XCTAssertTrue(isMalformed(head(path: nil)))
        XCTAssertTrue(isMalformed(head(path: "http://other.test/")), "absolute-form names another origin")
        XCTAssertTrue(isMalformed(head(path: "*")), "asterisk-form only for OPTIONS")
        var nameless = head()
        nameless.method = nil
        XCTAssertTrue(isMalformed(nameless))
    }

    func testWhatTheHTTP1RulesRefuseIsRefused() {
        XCTAssertEqual(refusal(head(fields: [("x-a", "a\u{01}b")])), .invalid("control character in field value"))
        XCTAssertEqual(refusal(head(fields: [("x-a", "a\u{7F}")])), .invalid("control character in field value"))
        XCTAssertEqual(refusal(head(fields: [("x a", "b")])), .invalid("invalid character in field name"))
        XCTAssertEqual(refusal(head(fields: [("", "b")])), .invalid("invalid character in field name"))
        XCTAssertEqual(refusal(head(path: "/a#frag")), .invalid("fragment in request target"))
        XCTAssertEqual(refusal(head(path: "/a b")), .invalid("invalid character in request target"))
        XCTAssertEqual(refusal(head(path: "/\u{7F}")), .invalid("invalid character in request target"))
        XCTAssertEqual(refusal(head(path: "/caf\u{E9}")), .invalid("invalid character in request target"))
        XCTAssertEqual(refusal(head("GE T")), .invalid("malformed request line"))
        XCTAssertEqual(refusal(head("GET(")), .invalid("malformed request line"))
        for bad in ["a b", "a@b.test", "api.test:0", "api.test:99999", "[::1", "a/b"] {
            XCTAssertEqual(refusal(head(authority: bad)), .invalid("invalid Host"), bad)
        }
        XCTAssertEqual(refusal(head("POST", fields: [("content-length", "5x")])), .invalid("invalid Content-Length"))
        XCTAssertEqual(refusal(head("POST", fields: [("content-length", "-1")])), .invalid("invalid Content-Length"))
        XCTAssertEqual(refusal(head(fields: [("content-length", "1"), ("content-length", "1")])),
                       .invalid("multiple Content-Length fields"))
    }

    /// `:path` is read eight bytes at a time: a byte no target may have is found wherever it
    /// sits in a long one, and named for what it is (as in an HTTP/1.1 request line).
    func testABadPathByteIsFoundAtEveryPosition() throws {
        let path = "/grpc.health.v1.Health/Check"
        for length in 1...path.count {
            let (request, _) = try built(head(path: String(path.prefix(length))))
            XCTAssertEqual(request.target, .origin(String(path.prefix(length))))
        }
        for position in 1..<path.count {
            for (bad, message) in [("#", "fragment in request target"), ("\u{7F}", "invalid character in request target"),
                                   (" ", "invalid character in request target"), ("é", "invalid character in request target")] {
                var target = path
                target.insert(contentsOf: bad, at: target.index(target.startIndex, offsetBy: position))
                XCTAssertEqual(refusal(head(path: target)), .invalid(message), "\(position) \(bad)")
            }
        }
    }

    func testTheHeadSizeAndFieldCountLimits() {
        XCTAssertEqual(refusal(head(fields: (0..<5).map { ("x-\($0)", "v") }), maxFields: 5), .tooManyFields)
        XCTAssertNil(refusal(head(fields: (0..<4).map { ("x-\($0)", "v") }), maxFields: 5), "Host and four fields")
        XCTAssertEqual(refusal(head(fields: [("x-a", "v"), ("cookie", "a=1")]), maxFields: 2), .tooManyFields,
                       "the joined cookie is a line")
        // "GET /p?q=1 HTTP/1.1\r\n" (21) + "Host: api.test\r\n" (16) + "x-a: 12345\r\n" (12) + "\r\n" (2).
        let sized = head(fields: [("x-a", "12345")])
        XCTAssertNil(refusal(sized, headLimit: 51))
        XCTAssertEqual(refusal(sized, headLimit: 50), .headTooLarge)
    }

    /// A received value that is not UTF-8 is refused, never altered on its way upstream.
    func testAReceivedValueThatIsNotUTF8IsRefusedAndOneThatIsGoesOnAsItIs() throws {
        var received = head()
        var recent = HTTP2Head.RecentValues()
        let name = Array("x-note".utf8)
        [0x61, 0xFF, 0x62].withUnsafeBufferPointer { value in
            name.withUnsafeBufferPointer { received.add(name: $0, value: value, recent: &recent) }
        }
        XCTAssertEqual(refusal(received), .invalid("field value is not valid UTF-8"))
        let (request, _) = try built(head(fields: [("x-note", "café\tau lait")]))
        XCTAssertEqual(request.fields.values("x-note"), ["café\tau lait"])
    }

    /// A connection's last `Host` is taken for a head whose `Host` has exactly its bytes; any
    /// other is checked and parsed on its own, and becomes the last one; a bad one is refused
    /// and not remembered.
    func testTheLastHostIsTakenOnlyForTheSameBytesAndABadOneIsStillRefused() throws {
        var last: ParsedHost?
        func host(_ authority: String) -> Authority? {
            guard case .head(let request, _) = HTTP2RequestHeadValidator.validate(head(authority: authority), endStream: true,
                                                                                  lastHost: &last) else { return nil }
            return request.host
        }
        XCTAssertEqual(host("Api.Test:8443"), Authority(host: "api.test", port: 8443))
        let remembered = try XCTUnwrap(last)
        XCTAssertEqual(host("Api.Test:8443"), Authority(host: "api.test", port: 8443))
        XCTAssertTrue(last === remembered, "the same bytes: the same memo")
        for (authority, expected) in [("api.test:8443", Authority(host: "api.test", port: 8443)),
                                      ("other.test", Authority(host: "other.test", port: nil))] {
            XCTAssertEqual(host(authority), expected, authority)
            XCTAssertEqual(last?.authority, expected, "\(authority) is the last one now")
        }
        let before = last
        XCTAssertNil(host("a@b.test"))
        XCTAssertTrue(last === before, "a refused one is not remembered")
    }

    /// A head built in the storage of a head done with reads the new request's fields only,
    /// whether the old bytes were more or fewer.
    func testAHeadBuiltInRecycledStorageReadsTheNewFields() throws {
        for oldValue in [String(repeating: "o", count: 200), "o"] {
            guard case .head(var first, _) = validate(head(fields: [("x-old", oldValue), ("x-more", "m")])) else {
                return XCTFail("refused")
            }
            let storage = try XCTUnwrap(RequestHead.reclaimStorage(&first))
            guard case .head(let second, _) = validate(head(fields: [("x-new", "n")]), reusing: storage) else {
                return XCTFail("refused")
            }
            XCTAssertEqual(lines(second), ["Host: api.test", "x-new: n"])
            XCTAssertEqual(second.host?.description, "api.test")
        }
    }

    /// The old translate-and-parse (the fuzzer's oracle) agrees on the heads above.
    func testTheOracleAgreesOnTheseHeads() {
        let heads = [head(fields: [("accept", "*/*"), ("cookie", "a"), ("cookie", "b")]), head("POST"),
                     head(authority: "a b"), head(path: "/a#b"), head(fields: [("x-a", "a\u{01}b")]),
                     head(authority: nil, fields: [("host", "h.test")]), head(scheme: "ftp")]
        for given in heads {
            for endStream in [true, false] {
                XCTAssertEqual(HTTP2RequestCheck.differences(given, endStream: endStream), [], "\(given)")
            }
        }
    }
}
