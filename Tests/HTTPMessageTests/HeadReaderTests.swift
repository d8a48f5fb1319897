import EventLoop
import HTTP1
import HTTPMessage
import XCTest

/// The one head-reading loop: a head delivered in any split is read once, exactly, and what
/// follows it stays buffered; limits and malformed heads throw without draining.
final class HeadReaderTests: XCTestCase {
    private let wire = Array("GET /a HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "v", count: 300))\r\n\r\nNEXT".utf8)

    func testAHeadSplitAtEveryByteIsReadOnceAndLeavesWhatFollows() throws {
        for split in 1..<(wire.count - 4) {
            let input = OwnedEventBuffer()
            var reader = HeadReader(limit: 4096)
            input.buffer.append(Array(wire[..<split]))
            var parses = 0
            let parse = { (bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> RequestHead in
                parses += 1
                return try RequestHeadParser.parse(bytes)
            }
            XCTAssertNil(try reader.read(from: input.buffer, parse), "split \(split)")
            XCTAssertEqual(input.buffer.count, split, "nothing drained while incomplete")
            input.buffer.append(Array(wire[split...]))
            let head = try XCTUnwrap(reader.read(from: input.buffer, parse))
            XCTAssertEqual(head.method, "GET")
            XCTAssertEqual(parses, 1, "the parser sees exactly one complete head")
            XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8), "split \(split)")
        }
    }

    func testConsecutiveHeadsAreReadInOrder() throws {
        let input = OwnedEventBuffer()
        var reader = HeadReader(limit: 4096)
        input.buffer.append("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        let parse = { (bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int in
            try ResponseHeadParser.parse(bytes, requestMethod: "GET").status
        }
        XCTAssertEqual(try reader.read(from: input.buffer, parse), 100)
        XCTAssertEqual(try reader.read(from: input.buffer, parse), 200)
        XCTAssertNil(try reader.read(from: input.buffer, parse))
        XCTAssertTrue(input.buffer.isEmpty)
    }

    func testAHeadBeyondTheLimitAndAMalformedOneThrow() {
        let big = OwnedEventBuffer()
        var reader = HeadReader(limit: 64)
        big.buffer.append(Array(wire))
        XCTAssertThrowsError(try reader.read(from: big.buffer) { (bytes) throws(HTTPParseError) in try RequestHeadParser.parse(bytes) }) {
            XCTAssertEqual($0 as? HTTPParseError, .headTooLarge)
        }
        let bad = OwnedEventBuffer()
        var other = HeadReader(limit: 4096)
        bad.buffer.append("GET / HTTP/1.1\nHost: x\r\n\r\n")
        XCTAssertThrowsError(try other.read(from: bad.buffer) { (bytes) throws(HTTPParseError) in try RequestHeadParser.parse(bytes) },
                             "a bare LF is refused (a smuggling vector)")
        XCTAssertEqual(bad.buffer.count, 26, "nothing drained")
    }

    // MARK: - a parser that finds the end of its head itself

    private func prefixParse(_ count: UnsafeMutablePointer<Int>) -> (UnsafeRawBufferPointer) throws(HTTPParseError) -> (head: RequestHead, length: Int) {
        { (bytes) throws(HTTPParseError) in
            count.pointee += 1
            return try RequestHeadParser.parsePrefix(bytes)
        }
    }

    func testAWholeHeadIsParsedOnceWithoutAScanAndWhatFollowsStays() throws {
        let input = OwnedEventBuffer()
        var reader = HeadReader(limit: 4096)
        input.buffer.append(wire)
        var parses = 0
        let head = try XCTUnwrap(reader.read(from: input.buffer, prefix: prefixParse(&parses)))
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(parses, 1)
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8), "exactly the head was drained")
    }

    func testAPrefixParserGetsTheSameHeadsForEverySplit() throws {
        for split in 1..<(wire.count - 4) {
            let input = OwnedEventBuffer()
            var reader = HeadReader(limit: 4096)
            input.buffer.append(Array(wire[..<split]))
            var parses = 0
            XCTAssertNil(try reader.read(from: input.buffer, prefix: prefixParse(&parses)), "split \(split)")
            XCTAssertEqual(input.buffer.count, split, "nothing drained while incomplete")
            input.buffer.append(Array(wire[split...]))
            let head = try XCTUnwrap(reader.read(from: input.buffer, prefix: prefixParse(&parses)))
            XCTAssertEqual(head.fields.first("x-long")?.count, 300, "split \(split)")
            XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("NEXT".utf8), "split \(split)")
            // The next head starts fresh: a whole one is again parsed without a scan.
            input.buffer.drain(4)
            input.buffer.append("GET /b HTTP/1.1\r\nHost: y\r\n\r\n")
            XCTAssertEqual(try reader.read(from: input.buffer, prefix: prefixParse(&parses))?.target, .origin("/b"))
        }
    }

    /// A connection's heads as a forward proxy's app sends them (absolute form, one authority),
    /// pipelined and cut at every byte, read with the authority the connection remembers: each
    /// head is the one sent, a head naming another authority gets its own, and one naming a
    /// bad authority after good ones is refused, with nothing of it drained.
    func testAConnectionsHeadsSplitAtEveryByteKeepTheirOwnAuthorityWithTheRememberedOne() throws {
        let stream = Array(("GET http://api.test:8080/a HTTP/1.1\r\nHost: api.test:8080\r\n\r\n"
            + "GET http://api.test:8080/b HTTP/1.1\r\nHost: api.test:8080\r\n\r\n"
            + "GET http://other.test/c HTTP/1.1\r\nHost: other.test\r\n\r\n"
            + "GET http://api.test:8080/d HTTP/1.1\r\nHost: api.test:8080\r\n\r\n").utf8)
        let bad = Array("GET http://api.te$t:8080/e HTTP/1.1\r\nHost: api.te$t:8080\r\n\r\n".utf8)
        let expected = [("/a", "api.test", 8080), ("/b", "api.test", 8080), ("/c", "other.test", nil), ("/d", "api.test", 8080)]
        for split in 1..<stream.count {
            let input = OwnedEventBuffer()
            var reader = HeadReader(limit: 4096)
            var lastHost: ParsedHost?
            func next() throws -> RequestHead? {
                try reader.read(from: input.buffer) { (bytes) throws(HTTPParseError) in
                    try RequestHeadParser.parsePrefix(bytes, lastHost: &lastHost)
                }
            }
            var heads: [RequestHead] = []
            input.buffer.append(Array(stream[..<split]))
            while let head = try next() { heads.append(head) }
            input.buffer.append(Array(stream[split...]))
            while let head = try next() { heads.append(head) }
            XCTAssertEqual(heads.map { head -> (String, String, Int?) in
                guard case .absolute(_, _, let path) = head.target else { return ("", "", nil) }
                return (path, head.host?.host ?? "", head.host?.port)
            }.map { "\($0.0) \($0.1) \($0.2.map(String.init) ?? "-")" },
                expected.map { "\($0.0) \($0.1) \($0.2.map(String.init) ?? "-")" }, "split \(split)")
            input.buffer.append(bad)
            XCTAssertThrowsError(try next(), "split \(split)")
            XCTAssertEqual(input.buffer.count, bad.count, "nothing of the refused head drained")
        }
    }

    func testAPrefixParserRefusesWhatTheScannerRefusesWithTheSameError() {
        let cases: [(String, Int, HTTPParseError)] = [
            (String(decoding: wire, as: UTF8.self), 64, .headTooLarge),
            ("GET / HTTP/1.1\nHost: x\r\n\r\n", 4096, .invalid("bare LF in message head")),
            ("GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n", 4096, .invalid("bare CR in message head")),
            ("GET / HTTP/1.1\r\nHost: x\r\nBad Name: z\r\n\r\n", 4096, .invalid("whitespace in field name")),
            ("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 4096, .invalid("too many empty lines before start line")),
        ]
        for (text, limit, expected) in cases {
            for prefix in [false, true] {
                let input = OwnedEventBuffer()
                var reader = HeadReader(limit: limit)
                input.buffer.append(text)
                var parses = 0
                XCTAssertThrowsError(prefix
                    ? try reader.read(from: input.buffer, prefix: prefixParse(&parses))
                    : try reader.read(from: input.buffer) { (bytes) throws(HTTPParseError) in try RequestHeadParser.parse(bytes) }) {
                    XCTAssertEqual($0 as? HTTPParseError, expected, "\(text.debugDescription) prefix: \(prefix)")
                }
                XCTAssertEqual(input.buffer.count, text.utf8.count, "nothing drained")
            }
        }
        // Leading empty lines (up to four) are skipped either way.
        let input = OwnedEventBuffer()
        var reader = HeadReader(limit: 4096)
        input.buffer.append("\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
        var parses = 0
        XCTAssertEqual(try reader.read(from: input.buffer, prefix: prefixParse(&parses))?.target, .origin("/c"))
        XCTAssertTrue(input.buffer.isEmpty)
    }

    func testAResponsePrefixViewCoversExactlyItsHead() throws {
        let input = OwnedEventBuffer()
        var reader = HeadReader(limit: 4096)
        input.buffer.append("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
        let parse = { (bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> (head: [Int], length: Int) in
            let view = try ResponseHeadParser.viewPrefix(bytes, requestMethod: "GET")
            return ([view.status, view.bytes.count], view.bytes.count)
        }
        XCTAssertEqual(try reader.read(from: input.buffer, prefix: parse), [100, 25])
        XCTAssertEqual(try reader.read(from: input.buffer, prefix: parse), [200, 38])
        XCTAssertEqual(input.buffer.peekBytes(max: 10), Array("body".utf8))
    }
}
