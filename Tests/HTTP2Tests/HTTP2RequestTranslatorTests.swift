import HTTP1
@testable import HTTP2
import XCTest

/// HTTP/2 request heads as the HTTP/1.1 requests a session reads.
final class HTTP2RequestTranslatorTests: XCTestCase {
    private func head(_ method: String = "GET", authority: String? = "api.test", path: String? = "/p?q=1",
                      fields: [(String, String)] = []) -> HTTP2Head {
        HTTP2Head(method: method, scheme: "https", authority: authority, path: path,
                  fields: HTTPFields(fields.map { HTTPField(name: $0.0, value: $0.1) }))
    }

    /// The translation, its head as text.
    private func translate(_ head: HTTP2Head, endStream: Bool) -> (head: String, framing: HTTP2RequestTranslator.BodyFraming)? {
        HTTP2RequestTranslator.translate(head, endStream: endStream).map { (String(decoding: $0.text, as: UTF8.self), $0.framing) }
    }

    func testABodylessGetBecomesAnOriginFormRequestThatClosesAfterItsResponse() throws {
        let (text, framing) = try XCTUnwrap(translate(head(fields: [("accept", "*/*")]), endStream: true))
        XCTAssertEqual(text, "GET /p?q=1 HTTP/1.1\r\nHost: api.test\r\naccept: */*\r\n\r\n")
        XCTAssertEqual(framing, HTTP2RequestTranslator.BodyFraming.none)
    }

    func testAuthorityWinsOverHostAndCookiesAreJoined() throws {
        let (text, _) = try XCTUnwrap(translate(
            head(fields: [("host", "evil.test"), ("cookie", "a=1"), ("x-b", "2"), ("cookie", "c=3"), ("te", "trailers")]), endStream: true))
        XCTAssertEqual(text, "GET /p?q=1 HTTP/1.1\r\nHost: api.test\r\nx-b: 2\r\ncookie: a=1; c=3\r\n\r\n")
    }

    /// A section written into the bytes of a head done with is the section written fresh,
    /// whether those bytes were more, fewer or too few to reuse: nothing of the old head stays.
    func testASectionWrittenIntoAnOldHeadsBytesIsTheSameAsAFreshOne() throws {
        let request = head("POST", fields: [("content-type", "text/plain"), ("cookie", "a=1"), ("cookie", "b=2"), ("x-id", "7")])
        let fresh = try XCTUnwrap(HTTP2RequestTranslator.translate(request, endStream: false)).fieldSection
        var longer = [UInt8](repeating: UInt8(ascii: "X"), count: fresh.count + 40)
        longer.reserveCapacity(fresh.count + 100)
        var shorter = [UInt8](repeating: UInt8(ascii: "Y"), count: 3)
        shorter.reserveCapacity(fresh.count + 100)
        let tooSmall = [UInt8](repeating: UInt8(ascii: "Z"), count: 5)
        for old in [longer, shorter, tooSmall] {
            let reused = try XCTUnwrap(HTTP2RequestTranslator.translate(request, endStream: false, into: old))
            XCTAssertEqual(reused.fieldSection, fresh)
            XCTAssertEqual(reused.framing, .chunked)
        }
    }

    /// A connection's last `Host` is taken for a head whose `Host` has exactly its bytes; any
    /// other is checked and parsed on its own, and becomes the last one.
    func testTheLastHostIsTakenOnlyForTheSameBytesAndABadOneIsStillRefused() throws {
        var last: ParsedHost?
        let first = try XCTUnwrap(HTTP2RequestTranslator.translate(head(authority: "Api.Test:8443"), endStream: true))
        XCTAssertEqual(try first.requestHead(lastHost: &last).host, Authority(host: "api.test", port: 8443))
        let remembered = try XCTUnwrap(last)
        XCTAssertEqual(try first.requestHead(lastHost: &last).host, Authority(host: "api.test", port: 8443))
        XCTAssertTrue(last === remembered, "the same bytes: the same memo")
        for (authority, expected) in [("api.test:8443", Authority(host: "api.test", port: 8443)), ("other.test", Authority(host: "other.test", port: nil)),
                                      ("Api.Test:9443", Authority(host: "api.test", port: 9443))] {
            let other = try XCTUnwrap(HTTP2RequestTranslator.translate(head(authority: authority), endStream: true))
            XCTAssertEqual(try other.requestHead(lastHost: &last).host, expected, authority)
            XCTAssertEqual(last?.authority, expected, "\(authority) is the last one now")
        }
        let remembered2 = last
        for bad in ["a@b.test", "api.test:0", "api.test:99999", "api test"] {
            let other = try XCTUnwrap(HTTP2RequestTranslator.translate(head(authority: bad), endStream: true))
            XCTAssertThrowsError(try other.requestHead(lastHost: &last), bad)
            XCTAssertTrue(last === remembered2, "a refused one is not remembered")
        }
    }

    /// The storage of a parsed head done with gives its bytes to the next translation, and the
    /// head parsed from it reads the new request's fields, not the old one's.
    func testAHeadParsedFromRecycledStorageReadsTheNewFields() throws {
        var first = try XCTUnwrap(HTTP2RequestTranslator.translate(
            head(fields: [("x-old", String(repeating: "o", count: 200))]), endStream: true)).requestHead()
        var storage = try XCTUnwrap(RequestHead.reclaimStorage(&first))
        let translation = try XCTUnwrap(HTTP2RequestTranslator.translate(head(fields: [("x-new", "n")]), endStream: true,
                                                                          into: storage.takeFieldBytes()))
        let second = try translation.requestHead(reusing: storage)
        XCTAssertEqual(second.fields.values("x-new"), ["n"])
        XCTAssertEqual(second.fields.values("x-old"), [])
        XCTAssertEqual(second.host?.description, "api.test")
    }

    /// Empty crumbs are left out of the joined cookie, and only-empty cookies make no line.
    func testEmptyCookieCrumbsAreLeftOut() throws {
        let joined = try XCTUnwrap(HTTP2RequestTranslator.translate(
            head(fields: [("cookie", "a=1"), ("cookie", ""), ("cookie", "b=2"), ("cookie", "c=3")]), endStream: true))
        XCTAssertEqual(try joined.requestHead().fields.values("cookie"), ["a=1; b=2; c=3"])
        let none = try XCTUnwrap(HTTP2RequestTranslator.translate(head(fields: [("cookie", ""), ("cookie", "")]), endStream: true))
        XCTAssertFalse(String(decoding: none.fieldSection, as: UTF8.self).contains("cookie"))
        XCTAssertEqual(try none.requestHead().fields.values("cookie"), [])
    }

    /// A name matches a field's only when each byte does, letters ignoring case: no other byte
    /// stands in for another.
    func testFieldNamesMatchLettersIgnoringCaseOnly() {
        let given = head(fields: [("X_Y", "1"), ("Content-Type", "a/b")])
        XCTAssertEqual(given.firstField("content-type"), "a/b")
        XCTAssertEqual(given.firstField("x_y"), "1")
        XCTAssertNil(given.firstField("x-y"))
        XCTAssertFalse(head(fields: [("content\u{0D}type", "a/b")]).hasField("content-type"), "CR is not a dash")
    }

    func testHostStandsInForAMissingAuthority() throws {
        let (text, _) = try XCTUnwrap(translate(head(authority: nil, fields: [("host", "h.test:8443")]), endStream: true))
        XCTAssertTrue(text.hasPrefix("GET /p?q=1 HTTP/1.1\r\nHost: h.test:8443\r\n"), text)
        XCTAssertNil(translate(head(authority: nil), endStream: true), "no authority at all")
    }

    func testBodiesAreFramedByTheirLengthOrChunked() throws {
        let sized = try XCTUnwrap(translate(head("POST", fields: [("content-length", "5")]), endStream: false))
        XCTAssertEqual(sized.framing, .raw)
        XCTAssertTrue(sized.head.contains("content-length: 5\r\n") && !sized.head.contains("transfer-encoding"))
        let streamed = try XCTUnwrap(translate(head("POST"), endStream: false))
        XCTAssertEqual(streamed.framing, .chunked)
        XCTAssertTrue(streamed.head.hasSuffix("transfer-encoding: chunked\r\n\r\n"), streamed.head)
        let empty = try XCTUnwrap(translate(head("POST"), endStream: true))
        XCTAssertEqual(empty.framing, HTTP2RequestTranslator.BodyFraming.none)
        XCTAssertTrue(empty.head.contains("content-length: 0\r\n"), "an HTTP/1.1 upstream does not wait for a body")
        XCTAssertEqual(HTTP2RequestTranslator.chunkHeader(300), "12c\r\n")
        XCTAssertEqual(HTTP2RequestTranslator.lastChunk(trailers: HTTPFields([HTTPField(name: "grpc-status", value: "0")])),
                       "0\r\ngrpc-status: 0\r\n\r\n")
    }

    func testConnectIsNotTranslated() {
        // (The server session answers a CONNECT stream itself.)
        let connect = HTTP2Head(method: "CONNECT", scheme: nil, authority: "db.test:5432", path: nil)
        XCTAssertNil(translate(connect, endStream: false))
    }

    func testTheHeadTheSessionGetsIsCheckedByTheHTTP1RulesAndClosesAfterItsResponse() throws {
        let translation = try XCTUnwrap(HTTP2RequestTranslator.translate(
            head("POST", fields: [("content-length", "5"), ("expect", "100-continue")]), endStream: false))
        let request = try translation.requestHead()
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.target, .origin("/p?q=1"))
        XCTAssertEqual(request.host?.host, "api.test")
        XCTAssertEqual(request.framing, .contentLength(5))
        XCTAssertTrue(request.expectsContinue)
        XCTAssertFalse(request.keepAlive, "one exchange per stream")
        XCTAssertEqual(request.fields.map(\.name), ["Host", "content-length", "expect"])
        let streamed = try HTTP2RequestTranslator.translate(head("POST"), endStream: false)?.requestHead()
        XCTAssertEqual(streamed?.framing, .chunked)
        let options = try HTTP2RequestTranslator.translate(head("OPTIONS", path: "*"), endStream: true)?.requestHead()
        XCTAssertEqual(options?.target, .asterisk)
    }

    /// A received value that is not UTF-8 goes on as its bytes, and the HTTP/1.1 rules refuse
    /// it, as they refuse an HTTP/1.1 app's: no value is altered on its way upstream.
    func testAReceivedValueThatIsNotUTF8IsRefusedNotAltered() throws {
        var received = head()
        let name = Array("x-note".utf8), value: [UInt8] = [0x61, 0xFF, 0x62]
        var lastAuthority: String?
        name.withUnsafeBufferPointer { name in
            value.withUnsafeBufferPointer { received.add(name: name, value: $0, lastAuthority: &lastAuthority) }
        }
        XCTAssertTrue(received.hasField("x-note"))
        let translation = try XCTUnwrap(HTTP2RequestTranslator.translate(received, endStream: true))
        let line: [UInt8] = Array("x-note: ".utf8) + value + [0x0D, 0x0A]
        XCTAssertNotNil(translation.fieldSection.firstRange(of: line), "the bytes as received")
        XCTAssertThrowsError(try translation.requestHead()) { error in
            XCTAssertEqual(error as? HTTPParseError, .invalid("field value is not valid UTF-8"))
        }
    }

    /// Fields given as Strings read back the same, in order, duplicates kept; looked up by a
    /// lowercase name ignoring case.
    func testFieldsReadBackAsGiven() {
        var given = head(fields: [("Accept", "a/b"), ("x-dup", "1"), ("X-Dup", "2")])
        XCTAssertEqual(given.fields.map(\.name), ["Accept", "x-dup", "X-Dup"])
        XCTAssertEqual(given.fields.map(\.value), ["a/b", "1", "2"])
        XCTAssertEqual(given.fieldCount, 3)
        XCTAssertEqual(given.firstField("x-dup"), "1")
        XCTAssertEqual(given.firstField("accept"), "a/b", "names compare ignoring case")
        XCTAssertNil(given.firstField("host"))
        given.fields.append(HTTPField(name: "host", value: "h.test"))
        XCTAssertEqual(given.firstField("host"), "h.test")
        XCTAssertEqual(given, head(fields: [("Accept", "a/b"), ("x-dup", "1"), ("X-Dup", "2"), ("host", "h.test")]))
        XCTAssertNotEqual(given, head(fields: [("Accept", "a/b")]))
    }

    func testWhatTheHTTP1RulesRefuseIsRefusedInPartsToo() throws {
        func refusal(_ head: HTTP2Head, maxFields: Int = 100) -> HTTPParseError? {
            guard let translation = HTTP2RequestTranslator.translate(head, endStream: true) else { return nil }
            do {
                _ = try translation.requestHead(maxFields: maxFields)
                return nil
            } catch {
                return error
            }
        }
        // A control character in a value (nghttp2 resets such a stream: HTTP2CodecTests) is
        // refused here too, as in an HTTP/1.1 head, should a head ever carry one.
        XCTAssertEqual(refusal(head(fields: [("x-a", "a\u{01}b")])), .invalid("control character in field value"))
        XCTAssertEqual(refusal(head(path: "/a#frag")), .invalid("fragment in request target"))
        XCTAssertEqual(refusal(head(path: "/a b")), .invalid("invalid character in request target"))
        XCTAssertEqual(refusal(head(path: "/\u{7F}")), .invalid("invalid character in request target"))
        XCTAssertEqual(refusal(head("GE T")), .invalid("malformed request line"))
        XCTAssertEqual(refusal(head(authority: "a b")), .invalid("invalid Host"))
        XCTAssertEqual(refusal(head("POST", fields: [("content-length", "5x")])), .invalid("invalid Content-Length"))
        XCTAssertEqual(refusal(head(fields: [("content-length", "1"), ("content-length", "1")])),
                       .invalid("multiple Content-Length fields"))
        XCTAssertEqual(refusal(head(fields: (0..<5).map { ("x-\($0)", "v") }), maxFields: 5), .tooManyFields)
        XCTAssertNil(refusal(head(fields: (0..<4).map { ("x-\($0)", "v") }), maxFields: 5), "Host and four fields")
    }

    func testAnExtendedConnectIsNotTranslated() {
        var websocket = head("CONNECT")
        websocket.extendedProtocol = "websocket"
        XCTAssertNil(translate(websocket, endStream: false))
    }
}
