import HTTP1
import XCTest

final class RequestHeadParserTests: XCTestCase {
    // MARK: - Valid requests

    func testSimpleGet() throws {
        let head = try parseRequest("GET /index.html?q=1 HTTP/1.1\r\nHost: Example.TEST\r\nAccept: */*\r\n\r\n")
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.target, .origin("/index.html?q=1"))
        XCTAssertEqual(head.version, .http1_1)
        XCTAssertEqual(head.host, Authority(host: "example.test", port: nil))
        XCTAssertEqual(head.framing, .none)
        XCTAssertTrue(head.keepAlive)
        XCTAssertFalse(head.expectsContinue)
        XCTAssertEqual(head.fields.fields, [
            HTTPField(name: "Host", value: "Example.TEST"),
            HTTPField(name: "Accept", value: "*/*"),
        ])
    }

    func testCaseInsensitiveFieldNames() throws {
        let head = try parseRequest("POST /x HTTP/1.1\r\nHOST: a.test\r\ncontent-length: 12\r\n\r\n")
        XCTAssertEqual(head.framing, .contentLength(12))
        XCTAssertEqual(head.host?.host, "a.test")
        XCTAssertEqual(head.fields.first("Content-Length"), "12")
        XCTAssertEqual(head.fields.fields[1].name, "content-length")  // case preserved
    }

    func testContentLengthZero() throws {
        XCTAssertEqual(try parseRequest(request(["Content-Length: 0"])).framing, .contentLength(0))
        XCTAssertEqual(try parseRequest(request(["Content-Length: 9223372036854775807"])).framing,
                       .contentLength(9_223_372_036_854_775_807))
    }

    func testChunkedVariants() throws {
        XCTAssertEqual(try parseRequest(request(["Transfer-Encoding:\tCHUNKED"])).framing, .chunked)
        XCTAssertEqual(try parseRequest(request(["Transfer-Encoding:   chunked \t "])).framing, .chunked)
        XCTAssertEqual(try parseRequest(request(["transfer-encoding: Chunked"])).framing, .chunked)
    }

    func testOWSTrimmedAndEmptyValues() throws {
        let head = try parseRequest(request(["X-A: \t spaced value \t ", "X-Empty:", "X-Empty2:   ", "X-B:tight"]))
        XCTAssertEqual(head.fields.first("x-a"), "spaced value")
        XCTAssertEqual(head.fields.first("x-empty"), "")
        XCTAssertEqual(head.fields.first("x-empty2"), "")
        XCTAssertEqual(head.fields.first("x-b"), "tight")
    }

    func testObsTextUTF8ValueAccepted() throws {
        let head = try parseRequest(request(["X-Name: caf\u{e9}"]))
        XCTAssertEqual(head.fields.first("x-name"), "caf\u{e9}")
    }

    func testConnectionTokens() throws {
        let head = try parseRequest(request(["Connection: keep-alive, Upgrade", "Upgrade: websocket"]))
        XCTAssertEqual(head.fields.tokens("connection"), ["keep-alive", "upgrade"])
        XCTAssertTrue(head.keepAlive)
    }

    func testKeepAliveRules() throws {
        XCTAssertFalse(try parseRequest(request(["Connection: close"])).keepAlive)
        XCTAssertFalse(try parseRequest(request(["Connection: Upgrade, CLOSE"])).keepAlive)
        XCTAssertFalse(try parseRequest(request(["Connection: keep-alive", "Connection: close"])).keepAlive)
        XCTAssertFalse(try parseRequest(request([], requestLine: "GET / HTTP/1.0", host: nil)).keepAlive)
        XCTAssertTrue(try parseRequest(request(["Connection: Keep-Alive"], requestLine: "GET / HTTP/1.0")).keepAlive)
        XCTAssertFalse(try parseRequest(request(["Connection: keep-alive, close"], requestLine: "GET / HTTP/1.0")).keepAlive)
    }

    func testExpectContinue() throws {
        XCTAssertTrue(try parseRequest(request(["Expect: 100-Continue", "Content-Length: 3"])).expectsContinue)
        XCTAssertTrue(try parseRequest(request(["expect: 100-continue"])).expectsContinue)
        XCTAssertFalse(try parseRequest(request(["Expect: something-else"])).expectsContinue)
    }

    func testHTTP10WithoutHost() throws {
        let head = try parseRequest("GET /old HTTP/1.0\r\nAccept: */*\r\n\r\n")
        XCTAssertEqual(head.version, .http1_0)
        XCTAssertNil(head.host)
        XCTAssertEqual(head.framing, .none)
    }

    func testLowercaseMethodIsAToken() throws {
        let head = try parseRequest(request([], requestLine: "get / HTTP/1.1"))
        XCTAssertEqual(head.method, "get")
        XCTAssertEqual(try parseRequest(request([], requestLine: "M-SEARCH / HTTP/1.1")).method, "M-SEARCH")
    }

    func testEveryMethodKeepsItsExactBytes() throws {
        // The common methods come from literals, any other from the bytes: same result, case kept.
        for method in ["GET", "PUT", "POST", "HEAD", "PATCH", "DELETE", "OPTIONS", "Get", "GETS", "PUTT", "POSt",
                       "HEAd", "PATCh", "DELETe", "OPTIONs", "PROPFIND", "X", "TRACE"] {
            XCTAssertEqual(try parseRequest(request([], requestLine: "\(method) / HTTP/1.1")).method, method)
        }
        XCTAssertEqual(try parseRequest(request([], requestLine: "CONNECT api.test:443 HTTP/1.1")).method, "CONNECT")
        XCTAssertEqual(try parseRequest(request([], requestLine: "CONNECt / HTTP/1.1")).method, "CONNECt",
                       "methods are case-sensitive: not a CONNECT")
    }

    func testLeadingEmptyLines() throws {
        let head = try parseRequest("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(head.method, "GET")
    }

    func testAbsoluteForm() throws {
        let head = try parseRequest(request([], requestLine: "GET http://api.test/x?y=1 HTTP/1.1", host: "api.test"))
        XCTAssertEqual(head.target, .absolute(scheme: "http", authority: Authority(host: "api.test", port: nil), path: "/x?y=1"))
        XCTAssertEqual(head.target.originFormString, "/x?y=1")
    }

    func testAbsoluteFormCaseAndDefaultPortMatch() throws {
        let head = try parseRequest(request([], requestLine: "GET http://API.test:80/ HTTP/1.1", host: "api.test"))
        XCTAssertEqual(head.target, .absolute(scheme: "http", authority: Authority(host: "api.test", port: 80), path: "/"))
        _ = try parseRequest(request([], requestLine: "GET HTTPS://api.test/ HTTP/1.1", host: "api.test:443"))
        _ = try parseRequest(request([], requestLine: "GET http://api.test./ HTTP/1.1", host: "API.TEST"))
    }

    func testAbsoluteFormEmptyPath() throws {
        let head = try parseRequest(request([], requestLine: "GET http://api.test HTTP/1.1", host: "api.test"))
        XCTAssertEqual(head.target, .absolute(scheme: "http", authority: Authority(host: "api.test", port: nil), path: "/"))
        let query = try parseRequest(request([], requestLine: "GET http://api.test?a=b HTTP/1.1", host: "api.test"))
        XCTAssertEqual(query.target, .absolute(scheme: "http", authority: Authority(host: "api.test", port: nil), path: "/?a=b"))
    }

    func testAbsoluteFormAtSignInPathAllowed() throws {
        let head = try parseRequest(request([], requestLine: "GET http://api.test/a@b HTTP/1.1", host: "api.test"))
        XCTAssertEqual(head.target, .absolute(scheme: "http", authority: Authority(host: "api.test", port: nil), path: "/a@b"))
    }

    func testIPv6Host() throws {
        let head = try parseRequest(request([], requestLine: "GET http://[::1]:8080/p HTTP/1.1", host: "[::1]:8080"))
        XCTAssertEqual(head.host, Authority(host: "::1", port: 8080))
        XCTAssertEqual(head.target, .absolute(scheme: "http", authority: Authority(host: "::1", port: 8080), path: "/p"))
    }

    func testConnect() throws {
        let head = try parseRequest(request([], requestLine: "CONNECT api.test:443 HTTP/1.1", host: "api.test:443"))
        XCTAssertEqual(head.target, .authority(Authority(host: "api.test", port: 443)))
        let v6 = try parseRequest(request([], requestLine: "CONNECT [2001:db8::1]:443 HTTP/1.1", host: "[2001:db8::1]:443"))
        XCTAssertEqual(v6.target, .authority(Authority(host: "2001:db8::1", port: 443)))
    }

    func testOptionsAsterisk() throws {
        XCTAssertEqual(try parseRequest(request([], requestLine: "OPTIONS * HTTP/1.1")).target, .asterisk)
    }

    func testDuplicatesKeptInOrder() throws {
        let head = try parseRequest(request(["Cookie: a=1", "X: 1", "cookie: b=2"]))
        XCTAssertEqual(head.fields.values("COOKIE"), ["a=1", "b=2"])
        XCTAssertEqual(head.fields.count, 4)
    }

    func testPipelined() throws {
        let first = "POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\n"
        let second = "GET /b HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        let buffer = bytes(first + "hello" + second)
        try buffer.withUnsafeBytes { buf in
            var scanner = HeadScanner()
            let length = try XCTUnwrap(try scanner.scan(buf))
            XCTAssertEqual(length, first.utf8.count)
            let head1 = try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: buf[0..<length]))
            XCTAssertEqual(head1.target, .origin("/a"))
            XCTAssertEqual(head1.framing, .contentLength(5))

            let rest = UnsafeRawBufferPointer(rebasing: buf[(length + 5)...])
            scanner.reset()
            let length2 = try XCTUnwrap(try scanner.scan(rest))
            XCTAssertEqual(length2, second.utf8.count)
            let head2 = try RequestHeadParser.parse(UnsafeRawBufferPointer(rebasing: rest[0..<length2]))
            XCTAssertEqual(head2.target, .origin("/b"))
            XCTAssertFalse(head2.keepAlive)
        }
    }

    // MARK: - Content-Length

    func testContentLengthAndTransferEncoding() {
        assertInvalid(try parseRequest(request(["Content-Length: 5", "Transfer-Encoding: chunked"])))
        assertInvalid(try parseRequest(request(["Transfer-Encoding: chunked", "Content-Length: 5"])))
    }

    func testDuplicateContentLength() {
        assertInvalid(try parseRequest(request(["Content-Length: 5", "Content-Length: 5"])))
        assertInvalid(try parseRequest(request(["Content-Length: 5", "content-length: 6"])))
        assertInvalid(try parseRequest(request(["Content-Length: 5, 5"])))
        assertInvalid(try parseRequest(request(["Content-Length: 5,5"])))
    }

    func testBadContentLengthValues() {
        for value in ["+5", "-1", "0x5", "5a", "", " ", "5 5", "5.0", "9223372036854775808", "99999999999999999999", "\u{661}"] {
            assertInvalid(try parseRequest(request(["Content-Length: \(value)"])), value)
        }
    }

    // MARK: - Transfer-Encoding

    func testBadTransferEncodings() {
        for value in ["gzip", "chunked, gzip", "chunked, chunked", "chunked,chunked", "xchunked", "chunked1",
                      "gzip, chunked", "identity", "", "  ", ",", "chunked;x=1"] {
            assertInvalid(try parseRequest(request(["Transfer-Encoding: \(value)"])), value)
        }
    }

    func testChunkedTwiceAcrossLines() {
        assertInvalid(try parseRequest(request(["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"])))
        assertInvalid(try parseRequest(request(["Transfer-Encoding: gzip", "Transfer-Encoding: chunked"])))
    }

    func testTransferEncodingInHTTP10() {
        assertInvalid(try parseRequest(request(["Transfer-Encoding: chunked"], requestLine: "POST / HTTP/1.0")))
    }

    // MARK: - Field syntax

    func testWhitespaceBeforeColon() {
        assertInvalid(try parseRequest("GET / HTTP/1.1\r\nHost : x\r\n\r\n"))
        assertInvalid(try parseRequest(request(["X-A\t: x"])))
    }

    func testObsFold() {
        assertInvalid(try parseRequest(request(["X-A: one", " two"])))
        assertInvalid(try parseRequest(request(["X-A: one", "\ttwo"])))
        assertInvalid(try parseRequest("GET / HTTP/1.1\r\n Host: a\r\n\r\n"))
    }

    func testControlCharactersInValues() {
        for value in ["a\u{0}b", "a\rb", "a\u{1}b", "a\u{1f}", "a\u{7f}b", "\u{0b}", "\u{0c}x"] {
            assertInvalid(try parseRequest(request(["X-A: \(value)"])), value.debugDescription)
            assertInvalid(try parseRequestDirect(request(["X-A: \(value)"])), value.debugDescription)
        }
        // HTAB inside a value is fine.
        XCTAssertEqual(try parseRequest(request(["X-A: a\tb"])).fields.first("x-a"), "a\tb")
    }

    func testInvalidUTF8ValueRejected() {
        var raw = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-A: ")
        raw += [0xFF, 0xFE]
        raw += bytes("\r\n\r\n")
        assertInvalid(try raw.withUnsafeBytes { try RequestHeadParser.parse($0) })
    }

    func testInvalidFieldNames() {
        for name in ["X(y", "X\"y", "X/y", "X@y", "X[y", "X{y", "X,y", "X;y", "X=y", "X?y", "X\\y", "\u{e9}t\u{e9}"] {
            assertInvalid(try parseRequest(request(["\(name): v"])), name)
        }
        assertInvalid(try parseRequest(request([": v"])))
        // Every tchar is allowed.
        XCTAssertNoThrow(try parseRequest(request(["!#$%&'*+-.^_`|~09azAZ: v"])))
    }

    /// Names and values are skipped 8 bytes at a time: every byte value, at every offset of a
    /// word, must still be judged as the grammar says (tchar in a name; VCHAR, SP, HTAB or
    /// UTF-8 in a value).
    func testEveryByteAtEveryOffsetOfNameAndValue() throws {
        let tchars = Set(Array("!#$%&'*+-.^_`|~0123456789".utf8) + Array("abcdefghijklmnopqrstuvwxyz".utf8)
                         + Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        for offset in 0..<19 {
            for byte in UInt8(0)...UInt8(255) where byte != 0x3A {
                var name = Array("Abcdefghijklmnopqrs".utf8)
                name[offset] = byte
                let raw = bytes("GET / HTTP/1.1\r\nHost: a\r\n") + name + bytes(": v\r\n\r\n")
                let parsed = try? raw.withUnsafeBytes { try RequestHeadParser.parse($0) }
                XCTAssertEqual(parsed != nil, tchars.contains(byte), "name byte \(byte) at \(offset)")
                if let parsed { XCTAssertEqual(parsed.fields.first(String(decoding: name, as: UTF8.self)), "v") }

                var value = Array("abcdefghijklmnopqrs".utf8)
                value[offset] = byte
                let rawValue = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-A: ") + value + bytes("\r\n\r\n")
                let parsedValue = try? rawValue.withUnsafeBytes { try RequestHeadParser.parse($0) }
                let allowed = byte == 0x09 || (byte >= 0x20 && byte < 0x7F)
                XCTAssertEqual(parsedValue != nil, allowed, "value byte \(byte) at \(offset)")
                if let parsedValue {
                    // Only the first or last byte can be whitespace to trim.
                    let trimmed = value.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
                    XCTAssertEqual(parsedValue.fields.first("x-a"), String(decoding: Array(trimmed), as: UTF8.self))
                }
            }
        }
    }

    func testLineWithoutColon() {
        assertInvalid(try parseRequest(request(["NoColonHere"])))
    }

    func testBareLF() {
        let vectors = [
            "GET / HTTP/1.1\nHost: a\n\n",
            "GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n\n",
            "GET / HTTP/1.1\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nX: y\n\r\n",
        ]
        for text in vectors {
            assertInvalid(try parseRequest(text), text.debugDescription)
            assertInvalid(try parseRequestDirect(text), text.debugDescription)
        }
    }

    func testBareCR() {
        assertInvalid(try parseRequest("GET / HTTP/1.1\rHost: a\r\n\r\n"))
        assertInvalid(try parseRequestDirect("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n"))
    }

    func testTrailingBytesAfterHeadRejected() {
        assertInvalid(try parseRequestDirect("GET / HTTP/1.1\r\nHost: a\r\n\r\nX"))
    }

    // MARK: - Host

    func testMissingHost() {
        assertInvalid(try parseRequest("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"))
    }

    func testTwoHostLines() {
        assertInvalid(try parseRequest(request(["Host: example.test"])))
        assertInvalid(try parseRequest(request(["host: other.test"], requestLine: "GET / HTTP/1.0")))
    }

    func testInvalidHost() {
        for value in ["", "a@b", "user:pw@a.test", "a b", ":80", "a:", "a:0", "a:65536", "a:8x", "a:-1",
                      "a:+80", "a..b:123456", "[::1", "::1", "[::1]x", "a/b", "a,b", "a!b", "[]", "."] {
            assertInvalid(try parseRequest(request([], host: value)), value)
        }
    }

    func testAbsoluteFormHostMismatch() {
        assertInvalid(try parseRequest(request([], requestLine: "GET http://a.test/ HTTP/1.1", host: "b.test")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://a.test:8080/ HTTP/1.1", host: "a.test")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://a.test/ HTTP/1.1", host: "a.test:8080")))
        assertInvalid(try parseRequest(request([], requestLine: "GET https://a.test/ HTTP/1.1", host: "a.test:80")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://a.test/ HTTP/1.1", host: "a.test:443")))
    }

    // MARK: - Request target

    func testUserinfoInTarget() {
        assertInvalid(try parseRequest(request([], requestLine: "GET http://a@b/ HTTP/1.1", host: "b")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://u:p@b/ HTTP/1.1", host: "b")))
        assertInvalid(try parseRequest(request([], requestLine: "CONNECT u@b:443 HTTP/1.1", host: "b:443")))
    }

    func testFragmentInTarget() {
        assertInvalid(try parseRequest(request([], requestLine: "GET /a#b HTTP/1.1")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://b/#x HTTP/1.1", host: "b")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http://b#x HTTP/1.1", host: "b")))
    }

    func testOriginFormMustStartWithSlash() {
        assertInvalid(try parseRequest(request([], requestLine: "GET index.html HTTP/1.1")))
        assertInvalid(try parseRequest(request([], requestLine: "GET ?a=b HTTP/1.1")))
    }

    func testControlCharactersInTarget() {
        for target in ["/a\tb", "/a\u{0}b", "/a\u{7f}", "/caf\u{e9}", "/a\u{1b}"] {
            assertInvalid(try parseRequest(request([], requestLine: "GET \(target) HTTP/1.1")), target.debugDescription)
        }
    }

    func testUnsupportedScheme() {
        assertInvalid(try parseRequest(request([], requestLine: "GET ftp://a.test/ HTTP/1.1", host: "a.test")))
        assertInvalid(try parseRequest(request([], requestLine: "GET ws://a.test/ HTTP/1.1", host: "a.test")))
        assertInvalid(try parseRequest(request([], requestLine: "GET http:/a.test/ HTTP/1.1", host: "a.test")))
    }

    func testAuthorityFormOnlyForConnect() {
        assertInvalid(try parseRequest(request([], requestLine: "GET a.test:443 HTTP/1.1", host: "a.test:443")))
        assertInvalid(try parseRequest(request([], requestLine: "connect a.test:443 HTTP/1.1", host: "a.test:443")))
    }

    func testConnectRequiresAuthorityForm() {
        assertInvalid(try parseRequest(request([], requestLine: "CONNECT / HTTP/1.1")))
        assertInvalid(try parseRequest(request([], requestLine: "CONNECT http://a.test/ HTTP/1.1", host: "a.test")))
        assertInvalid(try parseRequest(request([], requestLine: "CONNECT a.test HTTP/1.1", host: "a.test")))
        assertInvalid(try parseRequest(request([], requestLine: "CONNECT * HTTP/1.1")))
    }

    func testAsteriskOnlyForOptions() {
        assertInvalid(try parseRequest(request([], requestLine: "GET * HTTP/1.1")))
        assertInvalid(try parseRequest(request([], requestLine: "options * HTTP/1.1")))
    }

    // MARK: - Request line and version

    func testBadVersions() {
        for version in ["HTTP/2.0", "HTTP/1.2", "http/1.1", "HTTP/1.10", "HTTP/1", "HTTP/0.9", "HTTP/1.1 ", "HTTPS/1.1", ""] {
            assertInvalid(try parseRequest("GET / \(version)\r\nHost: a\r\n\r\n"), version)
        }
    }

    func testMalformedRequestLines() {
        for line in ["GET  / HTTP/1.1", "GET /  HTTP/1.1", "GET / ", "GET /", "GET", " GET / HTTP/1.1",
                     "G@T / HTTP/1.1", "GET\t/ HTTP/1.1", "GE(T / HTTP/1.1", "/ HTTP/1.1", ""] {
            assertInvalid(try parseRequest(request([], requestLine: line)), line.debugDescription)
        }
    }

    // MARK: - Limits

    func testTooManyFields() throws {
        let lines = (0..<100).map { "X-\($0): v" }
        XCTAssertEqual(try parseRequest(request(Array(lines.prefix(99)))).fields.count, 100)
        assertThrows(.tooManyFields, try parseRequest(request(lines)))
        assertThrows(.tooManyFields, try parseRequest(request(["A: 1", "B: 2"]), maxFields: 2))
        XCTAssertEqual(HTTPParseError.tooManyFields.status, 431)
    }

    func testHeadTooLarge() {
        let big = request(["X-Big: " + String(repeating: "a", count: 70_000)])
        assertThrows(.headTooLarge, try parseRequest(big))
        assertThrows(.headTooLarge, try parseRequest(request(["X: 0123456789"]), limit: 32))
        XCTAssertEqual(HTTPParseError.headTooLarge.status, 431)
    }

    /// A request target is read eight bytes at a time: a byte no target may have is found
    /// wherever it sits in a long one (in a word, or in the tail after the last whole word),
    /// and named for what it is; a target of visible ASCII of any length is taken.
    func testABadTargetByteIsFoundAtEveryPosition() throws {
        let path = "/v1/chat/completions?model=x"
        for length in 1...path.count {
            let target = String(path.prefix(length))
            XCTAssertEqual(try parseRequest("GET \(target) HTTP/1.1\r\nHost: a.test\r\n\r\n").target, .origin(target))
        }
        for position in 1..<path.count {
            for (bad, message) in [("#", "fragment in request target"), ("\u{7F}", "invalid character in request target"),
                                   ("\u{01}", "invalid character in request target"), ("é", "invalid character in request target")] {
                var target = path
                target.insert(contentsOf: bad, at: target.index(target.startIndex, offsetBy: position))
                assertThrows(.invalid(message), try parseRequest("GET \(target) HTTP/1.1\r\nHost: a.test\r\n\r\n"))
            }
        }
    }

    func testErrorMessagesDoNotEchoValues() {
        let secret = "Bearer sk-SECRET-123"
        let vectors = [
            request(["Authorization: \(secret)\u{1}"]),
            request(["Content-Length: \(secret)"]),
            request(["Transfer-Encoding: \(secret)"]),
            request([], host: secret),
        ]
        for text in vectors {
            XCTAssertThrowsError(try parseRequest(text)) { error in
                guard case .invalid(let message) = error as? HTTPParseError else { return XCTFail("\(error)") }
                XCTAssertFalse(message.contains("SECRET"))
                XCTAssertFalse(message.isEmpty)
            }
        }
    }

    // MARK: - Reclaimed heads

    /// A head handed back is refilled by the next parse: the same object, with nothing of the
    /// old head left (fewer fields, another method, framing and Host); a head someone else
    /// still holds is never handed back.
    func testAReclaimedHeadIsRefilledWithNothingOfTheOldOneLeft() throws {
        func parse(_ text: String, reusing storage: RequestHeadStorage) throws -> RequestHead {
            try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0, reusing: storage) }
        }
        var first = try parse("POST http://a.test:8080/upload HTTP/1.1\r\nHost: a.test:8080\r\nContent-Length: 5\r\n"
                              + "X-One: 1\r\nX-Two: 2\r\nConnection: x-one\r\n\r\n", reusing: RequestHeadStorage())
        let identity = ObjectIdentifier(first)
        do {
            let held = first
            XCTAssertNil(RequestHead.reclaimStorage(&first), "another reference still reads it")
            withExtendedLifetime(held) {}
        }
        let storage = try XCTUnwrap(RequestHead.reclaimStorage(&first))
        XCTAssertGreaterThan(storage.capacity, 0)
        let second = try parse("GET /b HTTP/1.0\r\nAccept: */*\r\n\r\n", reusing: storage)
        XCTAssertEqual(ObjectIdentifier(second), identity, "the same object, refilled")
        XCTAssertEqual(second.method, "GET")
        XCTAssertEqual(second.target, .origin("/b"))
        XCTAssertEqual(second.version, .http1_0)
        XCTAssertNil(second.host)
        XCTAssertEqual(second.framing, .none)
        XCTAssertFalse(second.keepAlive)
        XCTAssertEqual(second.fields.map(\.name), ["Accept"])
        XCTAssertEqual(second.withFieldSection { $0.connectionOptions().count }, 0, "no Connection line is left over")
    }
}
