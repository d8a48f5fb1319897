import HTTP1
import XCTest

final class ResponseHeadParserTests: XCTestCase {
    func testContentLength() throws {
        let head = try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Type: text/plain\r\n\r\n")
        XCTAssertEqual(head.version, .http1_1)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.reason, "OK")
        XCTAssertEqual(head.framing, .contentLength(42))
        XCTAssertTrue(head.keepAlive)
        XCTAssertEqual(head.fields.first("content-type"), "text/plain")
    }

    func testChunked() throws {
        let head = try parseResponse("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(head.framing, .chunked)
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n").framing, .chunked)
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n").framing, .chunked)
    }

    func testTransferEncodingNotEndingInChunked() throws {
        let head = try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
        XCTAssertEqual(head.framing, .untilClose)
        XCTAssertFalse(head.keepAlive)
    }

    func testNoFramingIsUntilClose() throws {
        let head = try parseResponse("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")
        XCTAssertEqual(head.framing, .untilClose)
        XCTAssertFalse(head.keepAlive)
    }

    func testNoBodyStatuses() throws {
        for status in [100, 101, 103, 204, 304] {
            let head = try parseResponse("HTTP/1.1 \(status) X\r\nContent-Length: 10\r\n\r\n")
            XCTAssertEqual(head.framing, .none, "\(status)")
            XCTAssertTrue(head.keepAlive)
        }
        XCTAssertEqual(try parseResponse("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n").framing, .none)
    }

    func testHeadResponse() throws {
        let head = try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", method: "HEAD")
        XCTAssertEqual(head.framing, .none)
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\n\r\n", method: "HEAD").framing, .none)
    }

    func testConnect2xx() throws {
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 Connection Established\r\n\r\n", method: "CONNECT").framing, .none)
        XCTAssertEqual(try parseResponse("HTTP/1.1 407 Auth\r\nContent-Length: 0\r\n\r\n", method: "CONNECT").framing,
                       .contentLength(0))
    }

    func testTransferEncodingAndContentLengthRejected() {
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n"))
    }

    func testTransferEncodingErrors() {
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"))
    }

    func testRepeatedContentLength() throws {
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n").framing, .contentLength(5))
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n").framing,
                       .contentLength(5))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"))
        for value in ["", "+5", "-1", "0x5", "5a", "9223372036854775808"] {
            assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\n"), value)
        }
    }

    func testBadStatusLines() {
        let lines = [
            "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 600 X", "HTTP/1.1 099 X", "HTTP/1.1 abc OK",
            "HTTP/2 200 OK", "HTTP/2.0 200 OK", "http/1.1 200 OK", "HTTP/1.1  200 OK", "HTTP/1.1", "HTTP/1.1 200OK",
            "HTTP/1.1 200 O\u{1}K", "ICY 200 OK", "",
        ]
        for line in lines {
            assertInvalid(try parseResponse(line + "\r\nContent-Length: 0\r\n\r\n"), line.debugDescription)
        }
    }

    func testEmptyAndMissingReason() throws {
        let empty = try parseResponse("HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(empty.reason, "")
        let missing = try parseResponse("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.reason, "")
        XCTAssertEqual(try parseResponse("HTTP/1.1 500 Internal\tServer Error\r\n\r\n").reason, "Internal\tServer Error")
    }

    func testHTTP10KeepAlive() throws {
        let plain = try parseResponse("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n")
        XCTAssertEqual(plain.version, .http1_0)
        XCTAssertFalse(plain.keepAlive)
        let kept = try parseResponse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n")
        XCTAssertTrue(kept.keepAlive)
        XCTAssertFalse(try parseResponse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n").keepAlive)
    }

    /// A lone `keep-alive` or `close` (any case) is read whole; a list naming either, or a
    /// value that only starts like one, is still walked element by element.
    func testConnectionKeepAliveOrCloseWholeOrInAList() throws {
        func keepAlive(_ version: String, _ value: String) throws -> Bool {
            try parseResponse("\(version) 200 OK\r\nConnection: \(value)\r\nContent-Length: 3\r\n\r\n").keepAlive
        }
        XCTAssertTrue(try keepAlive("HTTP/1.0", "Keep-Alive"))
        XCTAssertFalse(try keepAlive("HTTP/1.1", "CLOSE"))
        XCTAssertFalse(try keepAlive("HTTP/1.1", "keep-alive, close"), "close anywhere in the list wins")
        XCTAssertFalse(try keepAlive("HTTP/1.1", "Upgrade, close"))
        XCTAssertTrue(try keepAlive("HTTP/1.0", "Upgrade, keep-alive"))
        XCTAssertFalse(try keepAlive("HTTP/1.0", "keep-alivex"), "not keep-alive: HTTP/1.0 closes")
        XCTAssertTrue(try keepAlive("HTTP/1.1", "closed"), "not close: HTTP/1.1 stays")
        XCTAssertFalse(try keepAlive("HTTP/1.0", "keep-alive\r\nConnection: close"), "a second line is read")
    }

    /// One Content-Length of digits is taken whole; anything else is read as a list.
    func testContentLengthWholeOrAsAList() throws {
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n").framing, .contentLength(100))
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 7 , 7\r\n\r\n").framing, .contentLength(7))
        XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n").framing,
                       .contentLength(UInt64(Int64.max)))
        for value in ["7,", ",7"] {  // (empty list elements do not count, RFC 9110 §5.6.1)
            XCTAssertEqual(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\n").framing, .contentLength(7), value)
        }
        for value in ["7 7", "7, 8", " ", "7,,8"] {
            assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\n"), value)
        }
    }

    func testFieldRulesApply() {
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nX : y\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nX: y\r\n folded\r\n\r\n"))
        assertInvalid(try parseResponse("HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n"))
    }
}

/// The options a response's Connection lines name (hop-by-hop fields to drop), found through
/// the line the parse recorded when there is one, by a search when there are several.
final class ResponseConnectionOptionsTests: XCTestCase {
    private func options(_ text: String) throws -> [String] {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBytes { raw in
            let view = try ResponseHeadParser.view(raw, requestMethod: "GET")
            let section = view.section
            return section.connectionOptions().map { String(decoding: section.bytes[$0], as: UTF8.self) }
        }
    }

    func testOptionsOfOneOrSeveralConnectionLinesAnywhere() throws {
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), [])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nConnection: keep-alive, X-Hop ,close\r\nContent-Length: 0\r\n\r\n"),
                       ["X-Hop"])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nconnection: X-One\r\nA: 1\r\nCONNECTION: x-two, Keep-Alive\r\n\r\n"),
                       ["X-One", "x-two"])
    }

    func testALoneKeepAliveOrCloseNamesNothingAndAnythingLongerIsStillRead() throws {
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nConnection: Keep-Alive\r\n\r\n"), [])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"), [])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nConnection: keep-alives\r\n\r\n"), ["keep-alives"])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\n\r\n"), ["X-Hop"])
        XCTAssertEqual(try options("HTTP/1.1 200 OK\r\nConnection: X-Hop\r\n\r\n"), ["X-Hop"])
    }
}
